/* The golden checks of checks.c as a host program: exit status 0 when every check passed. */
#include <stdio.h>

#include "checks.h"

static void out(const char *s) { fputs(s, stdout); }

int main(void) { return rope2d_c_checks(out) == 0 ? 0 : 1; }
