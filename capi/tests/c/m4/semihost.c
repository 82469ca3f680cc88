/* ARM semihosting calls (Thumb: `bkpt 0xAB`, operation in r0, argument in r1). */
#include "semihost.h"

#define SYS_WRITE0 0x04
#define SYS_EXIT 0x18
#define SYS_EXIT_EXTENDED 0x20
#define ADP_Stopped_ApplicationExit 0x20026UL

static long sh_call(long op, const void *arg)
{
    register long r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    /* "memory": the host reads (and may write) the block r1 points to. */
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_write0(const char *s)
{
    sh_call(SYS_WRITE0, s);
}

void sh_exit(int code)
{
    /* SYS_EXIT_EXTENDED passes the exit code through (QEMU exits with it);
     * plain AArch32 SYS_EXIT could only report success or failure. */
    unsigned long block[2];
    block[0] = ADP_Stopped_ApplicationExit;
    block[1] = (unsigned long)code;
    sh_call(SYS_EXIT_EXTENDED, block);
    /* Host without SYS_EXIT_EXTENDED: fall back to SYS_EXIT (status 0 or 1). */
    sh_call(SYS_EXIT, (const void *)(code == 0 ? ADP_Stopped_ApplicationExit : 0x20023UL));
    for (;;) {
    }
}

/* Write v in decimal into the end of buf[0..n) (NUL-terminated);
 * returns a pointer to the first digit. */
static char *fmt_uint(char *buf, unsigned n, unsigned long v, unsigned min_digits)
{
    char *p = buf + n - 1;
    *p = '\0';
    do {
        *--p = (char)('0' + v % 10u);
        v /= 10u;
        if (min_digits > 0)
            min_digits--;
    } while (v != 0 || min_digits > 0);
    return p;
}

void sh_write_uint(unsigned long v)
{
    char buf[12];
    sh_write0(fmt_uint(buf, sizeof buf, v, 1));
}

void sh_write_int(long v)
{
    char buf[13];
    /* Negate in unsigned arithmetic so LONG_MIN works. */
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    char *p = fmt_uint(buf, sizeof buf, u, 1);
    if (v < 0)
        *--p = '-';
    sh_write0(p);
}

void sh_write_hex(unsigned long v)
{
    char buf[11];
    int i;
    buf[0] = '0';
    buf[1] = 'x';
    for (i = 0; i < 8; i++)
        buf[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xfu];
    buf[10] = '\0';
    sh_write0(buf);
}

void sh_write_f32(float v)
{
    /* Work in double (software, from libgcc): every float is exact in it and
     * the few scaling roundings stay far below the 7 digits printed. */
    union {
        float f;
        unsigned long u;
    } bits;
    char buf[16];
    char tmp[12];
    char *p = buf;
    char *q;
    double d;
    unsigned long digits;
    int exp10 = 0;

    bits.f = v;
    if (bits.u >> 31) { /* sign bit, so -0 prints as -0.000000e+00 */
        *p++ = '-';
        bits.u &= 0x7fffffffUL;
    }
    if (bits.u >= 0x7f800000UL) { /* exponent all ones: inf or nan */
        sh_write0(bits.u == 0x7f800000UL ? (p != buf ? "-inf" : "inf") : "nan");
        return;
    }
    d = bits.f;
    if (d != 0.0) {
        /* Bring d into [1, 10) by powers of ten (floats span 1e-45..3.4e38). */
        while (d >= 1e8) {
            d /= 1e8;
            exp10 += 8;
        }
        while (d >= 10.0) {
            d /= 10.0;
            exp10 += 1;
        }
        while (d < 1e-8) {
            d *= 1e8;
            exp10 -= 8;
        }
        while (d < 1.0) {
            d *= 10.0;
            exp10 -= 1;
        }
    }
    /* 7 significant digits, rounded half up. */
    digits = (unsigned long)(d * 1e6 + 0.5);
    if (digits >= 10000000UL) { /* e.g. 9.9999996 rounds up to 10.00000 */
        digits /= 10u;
        exp10 += 1;
    }
    q = fmt_uint(tmp, sizeof tmp, digits, 7);
    *p++ = *q++;
    *p++ = '.';
    while (*q)
        *p++ = *q++;
    *p++ = 'e';
    *p++ = exp10 < 0 ? '-' : '+';
    q = fmt_uint(tmp, sizeof tmp, (unsigned long)(exp10 < 0 ? -exp10 : exp10), 2);
    while (*q)
        *p++ = *q++;
    *p = '\0';
    sh_write0(buf);
}
