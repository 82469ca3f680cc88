/* Minimal ARM semihosting for bare-metal tests under QEMU (no libc).
 * Needs a debugger/QEMU with semihosting enabled: without one, the
 * `bkpt 0xAB` these functions execute faults. */
#ifndef ROPE2D_SEMIHOST_H
#define ROPE2D_SEMIHOST_H

/* Print a NUL-terminated string on the host console (SYS_WRITE0). */
void sh_write0(const char *s);

/* Print integers in decimal, or hexadecimal with a 0x prefix. */
void sh_write_uint(unsigned long v);
void sh_write_int(long v);
void sh_write_hex(unsigned long v);

/* Print a float in scientific form with 7 significant digits,
 * e.g. -1.234568e-03, nan, inf, -inf. */
void sh_write_f32(float v);

/* Stop the program; the host (QEMU) process exits with status `code`. */
void sh_exit(int code) __attribute__((noreturn));

#endif
