/* Cortex-M4F startup for QEMU mps2-an386: vector table, reset, fault report. */
#include "semihost.h"

int main(void);

/* Provided by mps2_an386.ld. */
extern unsigned long _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
extern unsigned long _stack_top[];

void Reset_Handler(void) __attribute__((noreturn));
void Fault_Handler(void) __attribute__((naked, noreturn));

/* Entry 0 is the initial SP, the rest are handlers: a union keeps ISO C happy
 * (no object-pointer to function-pointer casts). */
typedef union {
    void *sp;
    void (*handler)(void);
} vector_t;

/* Core exceptions only: no interrupt is ever enabled. Every fault, and the
 * unexpected NMI/SVC/PendSV/SysTick, goes to Fault_Handler. */
__attribute__((section(".vectors"), used)) static const vector_t vectors[16] = {
    {.sp = _stack_top},
    {.handler = Reset_Handler},
    {.handler = Fault_Handler}, /* NMI */
    {.handler = Fault_Handler}, /* HardFault */
    {.handler = Fault_Handler}, /* MemManage */
    {.handler = Fault_Handler}, /* BusFault */
    {.handler = Fault_Handler}, /* UsageFault */
    {0},
    {0},
    {0},
    {0},
    {.handler = Fault_Handler}, /* SVCall */
    {.handler = Fault_Handler}, /* DebugMonitor */
    {0},
    {.handler = Fault_Handler}, /* PendSV */
    {.handler = Fault_Handler}, /* SysTick */
};

#define CPACR (*(volatile unsigned long *)0xE000ED88UL)
#define CFSR (*(volatile unsigned long *)0xE000ED28UL)
#define HFSR (*(volatile unsigned long *)0xE000ED2CUL)

void Reset_Handler(void)
{
    /* volatile: stops GCC turning these loops into memcpy/memset calls,
     * which would run before .data/.bss exist (and needs a libc). */
    volatile unsigned long *dst;
    const unsigned long *src;

    /* The code is built with -mfloat-abi=hard: grant CP10/CP11 full access
     * before any FP instruction runs, or it UsageFaults (NOCP). */
    CPACR |= 0xFUL << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    for (src = _sidata, dst = _sdata; dst < _edata;)
        *dst++ = *src++;
    for (dst = _sbss; dst < _ebss;)
        *dst++ = 0;

    sh_exit(main());
}

/* Called by Fault_Handler with the stacked exception frame
 * (r0, r1, r2, r3, r12, lr, pc, xpsr). */
static void fault_report(const unsigned long *frame) __attribute__((used, noreturn));
static void fault_report(const unsigned long *frame)
{
    unsigned long ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    sh_write0("\nHardFault: exception ");
    sh_write_uint(ipsr & 0x1ffUL);
    sh_write0(" pc=");
    sh_write_hex(frame[6]);
    sh_write0(" lr=");
    sh_write_hex(frame[5]);
    sh_write0(" cfsr=");
    sh_write_hex(CFSR);
    sh_write0(" hfsr=");
    sh_write_hex(HFSR);
    sh_write0("\n");
    sh_exit(99);
}

/* Naked so that the stack pointer is still the one the hardware pushed the
 * frame onto; EXC_RETURN bit 2 tells whether that was MSP or PSP. */
void Fault_Handler(void)
{
    __asm__ volatile(
        "tst lr, #4\n\t"
        "ite eq\n\t"
        "mrseq r0, msp\n\t"
        "mrsne r0, psp\n\t"
        "b fault_report\n\t");
}
