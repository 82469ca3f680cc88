/* The C interface checked against golden vectors of the reference code, on the host (gcc) and
 * on a Cortex-M4F under QEMU: the same file, freestanding (no libc). Each check prints one
 * line; the last line is "N passed, M failed". */
#include "checks.h"

#include "golden_cases.h"
#include "rope2d.h"

/* The golden format's accuracy bound: |ours - float64| <= 4e-6 for every value. */
#define ACCURACY 4e-6f

static void (*print)(const char *s);
static int passed, failed;

static float absf(float v) { return v < 0.0f ? -v : v; }

static void print_uint(unsigned long v) {
    char buf[24];
    int i = (int)sizeof buf - 1;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && i > 0);
    print(&buf[i]);
}

static void report(const char *name, int ok, rope2d_status status, float worst) {
    print(ok ? "ok    " : "FAIL  ");
    print(name);
    if (status != ROPE2D_OK) {
        print(": status ");
        print_uint((unsigned long)status);
        print(" (");
        print(rope2d_status_message(status));
        print(")");
    }
    if (worst >= 0.0f) {
        print(": max |err| ");
        print_uint((unsigned long)(worst * 1e9f));
        print("e-9");
    }
    print("\n");
    if (ok) {
        passed++;
    } else {
        failed++;
    }
}

/* Largest |got - want| over n values (NaN counts as 1e9). */
static float worst_error(const float *got, const float *want, size_t n) {
    float worst = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float e = absf(got[i] - want[i]);
        if (!(e <= worst)) {
            worst = e == e ? e : 1e9f;
        }
    }
    return worst;
}

static void copy(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        dst[i] = src[i];
    }
}

static int same(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            return 0;
        }
    }
    return 1;
}

/* One golden case: `x` rotated by `status`'s call, compared with `want`. */
static void golden(const char *name, rope2d_status status, const float *x, const float *want,
                   size_t n) {
    float worst = status == ROPE2D_OK ? worst_error(x, want, n) : -1.0f;
    report(name, status == ROPE2D_OK && worst <= ACCURACY, status, worst);
}

#define AXIAL_LEN (AXIAL_TOKENS * AXIAL_HEADS * AXIAL_HEAD_DIM)
#define AXIAL_TOKEN_LEN (AXIAL_HEADS * AXIAL_HEAD_DIM)
#define WAN_LEN (WAN_TOKENS * WAN_HEADS * WAN_HEAD_DIM)
#define MROPE_LEN (MROPE_TOKENS * MROPE_HEADS * MROPE_HEAD_DIM)
#define LLAMA_LEN (LLAMA_TOKENS * LLAMA_HEADS * LLAMA_HEAD_DIM)
#define NEOX_LEN (NEOX_TOKENS * NEOX_HEADS * NEOX_HEAD_DIM)

/* Buffers: static, so that the firmware's stack stays small. */
static float axial_table[(4 + 4) * AXIAL_HEAD_DIM / 4][2];
static float wan_table[4096][2];
static float mrope_table[4096][2];
static float llama_table[16 * LLAMA_HEAD_DIM / 2][2];
static float q[AXIAL_TOKEN_LEN + AXIAL_LEN], k[AXIAL_TOKEN_LEN + AXIAL_LEN];
static float big[WAN_LEN], big2[WAN_LEN];

static void axial_checks(void) {
    rope2d_spec spec;
    rope2d_rope rope;
    size_t entries = 0;
    rope2d_status s = rope2d_spec_rope_vit(AXIAL_HEAD_DIM, &spec);
    if (s == ROPE2D_OK) {
        s = rope2d_table_storage_len(&spec, axial_extents, 2, &entries);
    }
    if (s == ROPE2D_OK && entries != sizeof axial_table / sizeof axial_table[0]) {
        s = ROPE2D_ERROR_STORAGE_LENGTH;
    }
    if (s == ROPE2D_OK) {
        s = rope2d_table_build(&spec, axial_extents, 2, &axial_table[0][0], entries, &rope);
    }
    report("rope_vit table (4 x 4, d 16)", s == ROPE2D_OK, s, -1.0f);
    if (s != ROPE2D_OK) {
        return;
    }

    /* q and k: a CLS token (left alone), then the golden grid; k's CLS differs. */
    rope2d_shape shape = {.heads = AXIAL_HEADS, .prefix = 1};
    for (size_t i = 0; i < AXIAL_TOKEN_LEN; i++) {
        q[i] = (float)i;
        k[i] = -(float)i;
    }
    copy(q + AXIAL_TOKEN_LEN, axial_input, AXIAL_LEN);
    copy(k + AXIAL_TOKEN_LEN, axial_input, AXIAL_LEN);
    s = rope2d_rotate_qk(&rope, q, sizeof q / sizeof q[0], k, sizeof k / sizeof k[0], shape,
                         axial_extents, NULL, 2, ROPE2D_FORWARD);
    golden("rope_vit rotate_qk, q (prefix 1)", s, q + AXIAL_TOKEN_LEN, axial_expected, AXIAL_LEN);
    golden("rope_vit rotate_qk, k (prefix 1)", s, k + AXIAL_TOKEN_LEN, axial_expected, AXIAL_LEN);
    int prefix_kept = 1;
    for (size_t i = 0; i < AXIAL_TOKEN_LEN; i++) {
        prefix_kept &= q[i] == (float)i && k[i] == -(float)i;
    }
    report("rope_vit prefix token untouched", prefix_kept, ROPE2D_OK, -1.0f);

    /* The inverse undoes it. */
    s = rope2d_rotate(&rope, q, sizeof q / sizeof q[0], shape, axial_extents, NULL, 2,
                      ROPE2D_INVERSE);
    golden("rope_vit inverse", s, q + AXIAL_TOKEN_LEN, axial_input, AXIAL_LEN);

    /* One head of the last token, at its explicit position. */
    const size_t last = AXIAL_TOKENS - 1;
    float head[AXIAL_HEAD_DIM];
    copy(head, axial_input + last * AXIAL_TOKEN_LEN + AXIAL_HEAD_DIM, AXIAL_HEAD_DIM);
    s = rope2d_rotate_head(&rope, head, AXIAL_HEAD_DIM, axial_positions + 2 * last, 2,
                           ROPE2D_FORWARD);
    golden("rope_vit rotate_head", s, head,
           axial_expected + last * AXIAL_TOKEN_LEN + AXIAL_HEAD_DIM, AXIAL_HEAD_DIM);

    /* Every backend this CPU has gives the same answer within the bound. */
    for (rope2d_backend b = ROPE2D_BACKEND_SCALAR; b <= ROPE2D_BACKEND_NEON; b++) {
        if (!rope2d_backend_available(b)) {
            continue;
        }
        rope2d_rope forced = rope;
        s = rope2d_rope_set_backend(&forced, b);
        copy(k, axial_input, AXIAL_LEN);
        if (s == ROPE2D_OK) {
            s = rope2d_rotate_at(&forced, k, AXIAL_LEN, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0},
                                 axial_positions, AXIAL_TOKENS, 2, ROPE2D_FORWARD);
        }
        print("      backend ");
        print(rope2d_backend_name(b));
        print("\n");
        golden("rope_vit rotate_at on the backend above", s, k, axial_expected, AXIAL_LEN);
    }

    /* Errors: each reported, nothing written. */
    copy(k, axial_input, AXIAL_LEN);
    s = rope2d_rotate(&rope, k, AXIAL_LEN - 1, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0}, axial_extents,
                      NULL, 2, ROPE2D_FORWARD);
    report("error: buffer length", s == ROPE2D_ERROR_BUFFER_LENGTH && same(k, axial_input, AXIAL_LEN),
           ROPE2D_OK, -1.0f);
    s = rope2d_rotate(&rope, k, AXIAL_LEN - AXIAL_TOKEN_LEN, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0},
                      axial_extents, NULL, 2, ROPE2D_FORWARD);
    report("error: token count", s == ROPE2D_ERROR_TOKEN_COUNT && same(k, axial_input, AXIAL_LEN),
           ROPE2D_OK, -1.0f);
    s = rope2d_rotate(&rope, NULL, AXIAL_LEN, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0}, axial_extents, NULL,
                      2, ROPE2D_FORWARD);
    report("error: null buffer", s == ROPE2D_ERROR_NULL_POINTER, ROPE2D_OK, -1.0f);
    s = rope2d_rotate(&rope, k, AXIAL_LEN, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0}, axial_extents, NULL, 2,
                      7);
    report("error: invalid direction", s == ROPE2D_ERROR_INVALID_ENUM, ROPE2D_OK, -1.0f);
    s = rope2d_rotate(&rope, k, AXIAL_LEN, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0}, axial_extents, NULL, 3,
                      ROPE2D_FORWARD);
    report("error: axes", s == ROPE2D_ERROR_AXES, ROPE2D_OK, -1.0f);
    s = rope2d_rotate_qk(&rope, k, AXIAL_LEN, k + AXIAL_TOKEN_LEN, AXIAL_LEN,
                         (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0}, axial_extents, NULL, 2, ROPE2D_FORWARD);
    report("error: q and k overlap", s == ROPE2D_ERROR_OVERLAP && same(k, axial_input, AXIAL_LEN),
           ROPE2D_OK, -1.0f);
    s = rope2d_rotate(&rope, &axial_table[0][0], 2 * AXIAL_HEAD_DIM, (rope2d_shape){.heads = 1, .prefix = 0},
                      (const size_t[]){1, 1}, NULL, 2, ROPE2D_FORWARD);
    report("error: buffer overlaps the table", s == ROPE2D_ERROR_OVERLAP, ROPE2D_OK, -1.0f);
    const uint32_t outside[2] = {0, 4};
    s = rope2d_rotate_head(&rope, k, AXIAL_HEAD_DIM, outside, 2, ROPE2D_FORWARD);
    report("error: position out of range",
           s == ROPE2D_ERROR_POSITION_OUT_OF_RANGE && same(k, axial_input, AXIAL_LEN), ROPE2D_OK,
           -1.0f);
    rope2d_rope zeroed = {{0}};
    s = rope2d_rotate(&zeroed, k, AXIAL_LEN, (rope2d_shape){.heads = AXIAL_HEADS, .prefix = 0}, axial_extents, NULL, 2,
                      ROPE2D_FORWARD);
    report("error: handle not built", s == ROPE2D_ERROR_BAD_HANDLE, ROPE2D_OK, -1.0f);
    rope2d_rope untouched = zeroed;
    s = rope2d_table_build(&spec, axial_extents, 2, &axial_table[0][0], entries - 1, &untouched);
    report("error: storage length, handle not written",
           s == ROPE2D_ERROR_STORAGE_LENGTH && untouched.opaque[0] == 0, ROPE2D_OK, -1.0f);
    s = rope2d_spec_rope_vit(0, &spec);
    report("error: rotary dim", s == ROPE2D_ERROR_ROTARY_DIM, ROPE2D_OK, -1.0f);
    s = rope2d_spec_rope_1d(64, ROPE2D_LAYOUT_INTERLEAVED, 1.0, &spec);
    report("error: invalid base", s == ROPE2D_ERROR_INVALID_BASE, ROPE2D_OK, -1.0f);
}

/* A 3-D or M-RoPE golden case through a table and explicit positions. */
static void table_case(const char *name, rope2d_status spec_status, const rope2d_spec *spec,
                       const size_t *extents, size_t axes, float (*table)[2], size_t capacity,
                       size_t heads, const uint32_t *positions, size_t tokens, const float *input,
                       const float *expected, size_t len) {
    rope2d_rope rope;
    size_t entries = 0;
    rope2d_status s = spec_status;
    if (s == ROPE2D_OK) {
        s = rope2d_table_storage_len(spec, extents, axes, &entries);
    }
    if (s == ROPE2D_OK && entries > capacity) {
        s = ROPE2D_ERROR_STORAGE_LENGTH;
    }
    if (s == ROPE2D_OK) {
        s = rope2d_table_build(spec, extents, axes, &table[0][0], entries, &rope);
    }
    copy(big, input, len);
    copy(big2, input, len);
    if (s == ROPE2D_OK) {
        s = rope2d_rotate_qk_at(&rope, big, len, big2, len, (rope2d_shape){.heads = heads, .prefix = 0}, positions,
                                tokens, axes, ROPE2D_FORWARD);
    }
    golden(name, s, big, expected, len);
    golden(name, s, big2, expected, len);
}

/* A 1-D golden case without a table (positions up to 65 535). */
static void direct_case(const char *name, rope2d_status spec_status, const rope2d_spec *spec,
                        size_t heads, const uint32_t *positions, size_t tokens,
                        const float *input, const float *expected, size_t len) {
    rope2d_rope rope;
    rope2d_status s = spec_status;
    if (s == ROPE2D_OK) {
        s = rope2d_direct(spec, &rope);
    }
    copy(big, input, len);
    if (s == ROPE2D_OK) {
        s = rope2d_rotate_at(&rope, big, len, (rope2d_shape){.heads = heads, .prefix = 0}, positions, tokens, 1,
                             ROPE2D_FORWARD);
    }
    golden(name, s, big, expected, len);
}

/* bf16 bits of `v`, rounded to nearest-even (no NaN here). */
static uint16_t bf16_bits(float v) {
    union {
        float f;
        uint32_t u;
    } x = {.f = v};
    return (uint16_t)((x.u + 0x7FFFu + ((x.u >> 16) & 1u)) >> 16);
}

static float bf16_value(uint16_t b) {
    union {
        float f;
        uint32_t u;
    } x = {.u = (uint32_t)b << 16};
    return x.f;
}

/* `v` rounded to nearest-even and saturated to int8 (|v| < 2^22 here). */
static int8_t i8_round(float v) {
    float r = (v + 12582912.0f) - 12582912.0f;
    return (int8_t)(r > 127.0f ? 127.0f : r < -128.0f ? -128.0f : r);
}

static uint16_t bf16_buf[AXIAL_LEN];
static int8_t i8_buf[AXIAL_LEN];
static int8_t i8_heads[AXIAL_LEN];

/* bf16 and int8 buffers: the result is the rounded float rotation of the same values. */
static void element_checks(void) {
    rope2d_spec spec;
    rope2d_rope rope;
    rope2d_status s = rope2d_spec_rope_vit(AXIAL_HEAD_DIM, &spec);
    if (s == ROPE2D_OK) {
        s = rope2d_table_build(&spec, axial_extents, 2, &axial_table[0][0],
                               sizeof axial_table / sizeof axial_table[0], &rope);
    }
    for (size_t i = 0; i < AXIAL_LEN; i++) {
        bf16_buf[i] = bf16_bits(axial_input[i]);
        q[i] = bf16_value(bf16_buf[i]);
    }
    rope2d_shape shape = {.heads = AXIAL_HEADS, .prefix = 0};
    if (s == ROPE2D_OK) {
        s = rope2d_rotate(&rope, q, AXIAL_LEN, shape, axial_extents, NULL, 2, ROPE2D_FORWARD);
    }
    if (s == ROPE2D_OK) {
        s = rope2d_rotate_elem(&rope, ROPE2D_BF16, bf16_buf, AXIAL_LEN, shape, axial_extents,
                               NULL, 2, ROPE2D_FORWARD);
    }
    int ok = s == ROPE2D_OK;
    for (size_t i = 0; ok && i < AXIAL_LEN; i++) {
        ok = bf16_buf[i] == bf16_bits(q[i]);
    }
    report("bf16 buffer = rounded float rotation", ok, s, -1.0f);

    /* int8 stored at scale 0.05, requantised to 0.04. */
    const float ratio = 0.05f / 0.04f;
    for (size_t i = 0; i < AXIAL_LEN; i++) {
        i8_buf[i] = i8_round(axial_input[i] * 40.0f);
        q[i] = (float)i8_buf[i] * ratio;
    }
    rope2d_shape scaled = {.heads = AXIAL_HEADS, .prefix = 0, .input_scale = 0.05f,
                           .output_scale = 0.04f};
    s = rope2d_rotate(&rope, q, AXIAL_LEN, shape, axial_extents, NULL, 2, ROPE2D_FORWARD);
    if (s == ROPE2D_OK) {
        s = rope2d_rotate_at_elem(&rope, ROPE2D_I8, i8_buf, AXIAL_LEN, scaled, axial_positions,
                                  AXIAL_TOKENS, 2, ROPE2D_FORWARD);
    }
    ok = s == ROPE2D_OK;
    for (size_t i = 0; ok && i < AXIAL_LEN; i++) {
        ok = i8_buf[i] == i8_round(q[i]);
    }
    report("int8 buffer (scales 0.05 -> 0.04) = rounded float rotation", ok, s, -1.0f);

    /* Per-head scales, every head at 0.05 -> 0.04: the bits of the tensor's scales above. */
    rope2d_scales heads[AXIAL_HEADS];
    for (size_t h = 0; h < AXIAL_HEADS; h++) {
        heads[h] = (rope2d_scales){.input = 0.05f, .output = 0.04f};
    }
    for (size_t i = 0; i < AXIAL_LEN; i++) {
        i8_heads[i] = i8_round(axial_input[i] * 40.0f);
    }
    s = rope2d_rotate_at_head_scales(&rope, ROPE2D_I8, i8_heads, AXIAL_LEN, shape, heads,
                                     AXIAL_HEADS, axial_positions, AXIAL_TOKENS, 2,
                                     ROPE2D_FORWARD);
    ok = s == ROPE2D_OK;
    for (size_t i = 0; ok && i < AXIAL_LEN; i++) {
        ok = i8_heads[i] == i8_buf[i];
    }
    report("int8 buffer, per-head scales = the tensor's", ok, s, -1.0f);
    s = rope2d_rotate_with_head_scales(&rope, ROPE2D_I8, i8_heads, AXIAL_LEN, shape, heads,
                                  AXIAL_HEADS - 1, axial_extents, NULL, 2, ROPE2D_FORWARD);
    report("error: per-head scales, one per head", s == ROPE2D_ERROR_INVALID_SCALES, ROPE2D_OK,
           -1.0f);
    s = rope2d_rotate_elem(&rope, ROPE2D_BF16, bf16_buf, AXIAL_LEN, scaled, axial_extents, NULL,
                           2, ROPE2D_FORWARD);
    report("error: scales on a bf16 buffer", s == ROPE2D_ERROR_INVALID_SCALES, ROPE2D_OK, -1.0f);
    s = rope2d_rotate_elem(&rope, 9, bf16_buf, AXIAL_LEN, shape, axial_extents, NULL, 2,
                           ROPE2D_FORWARD);
    report("error: element type", s == ROPE2D_ERROR_INVALID_ENUM, ROPE2D_OK, -1.0f);
}

static int16_t q15_table[sizeof axial_table / sizeof axial_table[0]][2];
static int16_t i16_buf[AXIAL_LEN];

/* A Q15 table (integer arithmetic only) rotating int16 in fixed point: within 2 LSB of the
 * rounded float rotation of the same values (|a| + |b| <= 2^14: the Q15 bound is 1 LSB, the
 * float table's own rounding adds at most one more tie); float buffers are refused. */
static void q15_checks(void) {
    rope2d_spec spec;
    rope2d_rope rope, f32_rope;
    const size_t entries = sizeof q15_table / sizeof q15_table[0];
    rope2d_status s = rope2d_spec_rope_vit(AXIAL_HEAD_DIM, &spec);
    if (s == ROPE2D_OK) {
        s = rope2d_table_build_q15(&spec, axial_extents, 2, &q15_table[0][0], entries, &rope);
    }
    if (s == ROPE2D_OK) {
        s = rope2d_table_build(&spec, axial_extents, 2, &axial_table[0][0], entries, &f32_rope);
    }
    for (size_t i = 0; i < AXIAL_LEN; i++) {
        float v = axial_input[i] * 2048.0f;
        v = v > 8191.0f ? 8191.0f : v < -8191.0f ? -8191.0f : v;
        i16_buf[i] = (int16_t)((v + 12582912.0f) - 12582912.0f);
        q[i] = (float)i16_buf[i];
    }
    rope2d_shape shape = {.heads = AXIAL_HEADS, .prefix = 0};
    if (s == ROPE2D_OK) {
        s = rope2d_rotate(&f32_rope, q, AXIAL_LEN, shape, axial_extents, NULL, 2, ROPE2D_FORWARD);
    }
    if (s == ROPE2D_OK) {
        s = rope2d_rotate_elem(&rope, ROPE2D_I16, i16_buf, AXIAL_LEN, shape, axial_extents, NULL,
                               2, ROPE2D_FORWARD);
    }
    int ok = s == ROPE2D_OK;
    for (size_t i = 0; ok && i < AXIAL_LEN; i++) {
        ok = absf((float)i16_buf[i] - q[i]) <= 2.0f;
    }
    report("Q15 table, int16 buffer within 2 LSB of the float rotation", ok, s, -1.0f);
    s = rope2d_rotate(&rope, q, AXIAL_LEN, shape, axial_extents, NULL, 2, ROPE2D_FORWARD);
    report("error: float buffer on a Q15 table", s == ROPE2D_ERROR_FIXED_POINT, ROPE2D_OK, -1.0f);
}

int rope2d_c_checks(void (*out)(const char *s)) {
    print = out;
    passed = failed = 0;
    print("rope2d ");
    print(rope2d_version());
    print(", backend ");
    print(rope2d_backend_name(rope2d_backend_auto()));
    print("\n");

    /* What runs, in one line: cut like snprintf, starting with the backend's name. */
    {
        char line[512];
        char tiny[8];
        const char *name = rope2d_backend_name(rope2d_backend_auto());
        size_t n = rope2d_backend_describe(rope2d_backend_auto(), line, sizeof line);
        size_t cut = rope2d_backend_describe(rope2d_backend_auto(), tiny, sizeof tiny);
        size_t name_len = 0;
        int starts = 1;
        while (name[name_len] != 0) {
            starts = starts && line[name_len] == name[name_len];
            name_len++;
        }
        print("      ");
        print(line);
        print("\n");
        report("backend description: starts with the name, snprintf-like length and cut",
               n > name_len && n < sizeof line && starts && cut == n && tiny[7] == 0 &&
                   rope2d_backend_describe(99, tiny, sizeof tiny) == 0 && tiny[0] == 0,
               ROPE2D_OK, -1.0f);
    }

    axial_checks();
    element_checks();
    q15_checks();

    rope2d_spec spec;
    rope2d_status s = rope2d_spec_wan(WAN_HEAD_DIM, 10000.0, &spec);
    table_case("wan 2.1 3-D table, rotate_qk_at", s, &spec, wan_extents, WAN_AXES, wan_table,
               sizeof wan_table / sizeof wan_table[0], WAN_HEADS, wan_positions, WAN_TOKENS,
               wan_input, wan_expected, WAN_LEN);

    const size_t sections[3] = {16, 24, 24};
    s = rope2d_spec_qwen2_vl_mrope(MROPE_HEAD_DIM, 1e6, sections, &spec);
    table_case("qwen2-vl m-rope table, rotate_qk_at", s, &spec, mrope_extents, MROPE_AXES,
               mrope_table, sizeof mrope_table / sizeof mrope_table[0], MROPE_HEADS,
               mrope_positions, MROPE_TOKENS, mrope_input, mrope_expected, MROPE_LEN);

    s = rope2d_spec_llama(LLAMA_HEAD_DIM, &spec);
    direct_case("llama 1-D direct (positions to 65535)", s, &spec, LLAMA_HEADS, llama_positions,
                LLAMA_TOKENS, llama_input, llama_expected, LLAMA_LEN);
    s = rope2d_spec_neox(NEOX_HEAD_DIM, &spec);
    direct_case("neox 1-D direct (positions to 65535)", s, &spec, NEOX_HEADS, neox_positions,
                NEOX_TOKENS, neox_input, neox_expected, NEOX_LEN);

    /* A 1-D table over 16 positions, a run of 8 tokens from position 5 (decode-style), agrees
     * with the tableless rotation of the same tokens. */
    rope2d_rope table, direct;
    const size_t extent = 16, run = 8;
    const uint32_t origin = 5, run_positions[8] = {5, 6, 7, 8, 9, 10, 11, 12};
    const size_t run_len = run * LLAMA_HEADS * LLAMA_HEAD_DIM;
    s = rope2d_spec_llama(LLAMA_HEAD_DIM, &spec);
    if (s == ROPE2D_OK) {
        s = rope2d_table_build(&spec, &extent, 1, &llama_table[0][0],
                               sizeof llama_table / sizeof llama_table[0], &table);
    }
    if (s == ROPE2D_OK) {
        s = rope2d_direct(&spec, &direct);
    }
    copy(big, llama_input, run_len);
    copy(big2, llama_input, run_len);
    if (s == ROPE2D_OK) {
        s = rope2d_rotate(&table, big, run_len, (rope2d_shape){.heads = LLAMA_HEADS, .prefix = 0}, &run, &origin, 1,
                          ROPE2D_FORWARD);
    }
    if (s == ROPE2D_OK) {
        s = rope2d_rotate_at(&direct, big2, run_len, (rope2d_shape){.heads = LLAMA_HEADS, .prefix = 0},
                             run_positions, run, 1, ROPE2D_FORWARD);
    }
    float worst = s == ROPE2D_OK ? worst_error(big, big2, run_len) : -1.0f;
    report("llama 1-D table run from 5 = direct", s == ROPE2D_OK && worst <= 1e-6f, s, worst);

    print_uint((unsigned long)passed);
    print(" passed, ");
    print_uint((unsigned long)failed);
    print(" failed\n");
    return failed;
}
