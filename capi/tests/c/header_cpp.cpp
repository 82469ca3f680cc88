// The header compiles as C++ (and its declarations have C linkage): CI builds this with
// g++ -std=c++11 -Wall -Wextra -Werror -pedantic.
#include "rope2d.h"

static_assert(sizeof(rope2d_rope) == ROPE2D_ROPE_WORDS * 8, "opaque handle size");

int main() {
    rope2d_spec spec;
    return rope2d_spec_rope_vit(64, &spec) == ROPE2D_OK ? 0 : 1;
}
