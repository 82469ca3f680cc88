#ifndef ROPE2D_CHECKS_H
#define ROPE2D_CHECKS_H

/* Runs every golden check, printing through `out`, and finally prints
 * "N passed, M failed". Returns the number of failures (M). */
int rope2d_c_checks(void (*out)(const char *s));

#endif
