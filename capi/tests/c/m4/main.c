/* Firmware entry: run the rope2d golden checks, report through semihosting.
 * startup.c turns main's return value into QEMU's exit status. */
#include "../checks.h"
#include "semihost.h"

int main(void)
{
    return rope2d_c_checks(sh_write0) == 0 ? 0 : 1;
}
