//! Floating-point environment of the worker threads.
//!
//! Fields decaying in a PML or a lossy material pass through subnormal numbers, which x86 and
//! ARM cores handle in microcode at up to 100 times the cost of a normal operation: a run can
//! slow to a crawl as its fields die out. Flushing subnormals to zero changes values only
//! below 1e-38 (f32) / 1e-308 (f64), far under any physical signal.

/// Make the calling thread flush subnormal results and inputs to zero.
pub fn flush_subnormals_to_zero() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads and writes this thread's MXCSR register only; setting FTZ (bit 15) and
    // DAZ (bit 6) is supported by every x86_64 processor with SSE2.
    unsafe {
        let mut csr: u32 = 0;
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr |= 0x8040;
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: sets the FZ bit (24) of this thread's FPCR; defined on every AArch64 core.
    unsafe {
        let mut fpcr: u64;
        std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack));
        fpcr |= 1 << 24;
        std::arch::asm!("msr fpcr, {}", in(reg) fpcr, options(nomem, nostack));
    }
}

/// True if the calling thread flushes subnormals to zero ([`flush_subnormals_to_zero`]): what
/// a thread that works for it sets in turn, so that both give the same bits.
pub fn subnormals_flushed() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr: u32 = 0;
        // SAFETY: stores this thread's MXCSR register into `csr`; nothing else is touched.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        }
        csr & 0x8040 == 0x8040
    }
    #[cfg(target_arch = "aarch64")]
    {
        let fpcr: u64;
        // SAFETY: reads this thread's FPCR; nothing is written.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack));
        }
        fpcr & (1 << 24) != 0
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_flushes_subnormals_once_told_to() {
        std::thread::spawn(|| {
            let tiny = std::hint::black_box(f32::MIN_POSITIVE);
            assert!(!subnormals_flushed(), "a new thread keeps subnormals");
            assert!(tiny / 4.0 > 0.0);
            flush_subnormals_to_zero();
            assert!(subnormals_flushed());
            assert_eq!(std::hint::black_box(tiny) / 4.0, 0.0);
        })
        .join()
        .expect("the test thread");
    }
}
