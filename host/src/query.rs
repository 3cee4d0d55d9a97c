//! The device query (the execution-model lesson's `simpleDeviceQuery`, and
//! more) and Little's law for latency hiding (§3.4): how many operations,
//! bytes, threads and warps must be in flight per SM to keep the
//! arithmetic units and the memory system busy.
//!
//! Little's law: *parallelism needed = latency × throughput*.
//!
//! * **Arithmetic**: latency (cycles) × FP32 operations per SM per cycle =
//!   operations in flight per SM; ÷ 32 = warps per SM (each warp
//!   instruction is 32 operations). The lesson's Fermi row: 20 × 32 = 640
//!   operations = 20 warps.
//! * **Memory**: bandwidth (GB/s) ÷ memory clock (GHz) = bytes per cycle;
//!   × latency (cycles) = bytes in flight; ÷ bytes each thread loads =
//!   threads; ÷ 32 = warps; ÷ SMs = warps per SM. The lesson's Fermi row:
//!   144 GB/s ÷ 1.566 GHz = 92 B/cycle × 800 = 74 KB; ÷ 4 B = 18 500
//!   threads = 579 warps = 36 per SM (16 SMs).
//!
//! The latencies are assumptions, not measurements (the lesson's 20 and
//! 800 cycles are for Fermi/Kepler): [`LittleAssumptions`] states them and
//! the `device_query` example takes them as flags.

use std::fmt::Write as _;

use crate::device::DeviceInfo;

/// FP32 lanes per SM, i.e. FP32 fused multiply-adds issued per cycle per
/// SM, by compute capability (NVIDIA's CUDA programming guide throughput
/// table). `None` for an architecture not in the table.
pub fn fp32_lanes_per_sm(major: u32, minor: u32) -> Option<u32> {
    Some(match (major, minor) {
        (7, _) => 64,
        (8, 0) => 64,
        (8, _) => 128,
        (9, 0) => 128,
        (10, _) | (12, _) => 128,
        _ => return None,
    })
}

/// The assumed inputs of Little's law.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LittleAssumptions {
    /// Arithmetic instruction latency, cycles (the lesson: 20).
    pub arithmetic_latency_cycles: f64,
    /// Global-memory latency, cycles (the lesson: 800).
    pub memory_latency_cycles: f64,
    /// Bytes each thread has in flight (the lesson: one `float`, 4).
    pub bytes_per_thread: f64,
}

impl Default for LittleAssumptions {
    fn default() -> Self {
        LittleAssumptions { arithmetic_latency_cycles: 20.0, memory_latency_cycles: 800.0, bytes_per_thread: 4.0 }
    }
}

/// Arithmetic parallelism needed per SM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArithmeticParallelism {
    /// Assumed latency, cycles.
    pub latency_cycles: f64,
    /// Operations per SM per cycle.
    pub ops_per_cycle: f64,
    /// `latency × throughput`: operations in flight per SM.
    pub ops_in_flight: f64,
    /// `ops_in_flight / warp size`.
    pub warps_per_sm: f64,
}

impl ArithmeticParallelism {
    /// Little's law for arithmetic.
    pub fn new(latency_cycles: f64, ops_per_cycle: f64, warp_size: u32) -> Self {
        let ops = latency_cycles * ops_per_cycle;
        ArithmeticParallelism {
            latency_cycles,
            ops_per_cycle,
            ops_in_flight: ops,
            warps_per_sm: ops / warp_size.max(1) as f64,
        }
    }
}

/// Memory parallelism needed for the whole device and per SM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryParallelism {
    /// Assumed latency, cycles of the memory clock.
    pub latency_cycles: f64,
    /// Bandwidth, GB/s (1e9 B/s).
    pub bandwidth_gbps: f64,
    /// Memory clock, GHz.
    pub clock_ghz: f64,
    /// `bandwidth / clock`.
    pub bytes_per_cycle: f64,
    /// `bytes_per_cycle × latency`.
    pub bytes_in_flight: f64,
    /// Assumed bytes in flight per thread.
    pub bytes_per_thread: f64,
    /// `bytes_in_flight / bytes_per_thread`.
    pub threads: f64,
    /// `threads / warp size`.
    pub warps: f64,
    /// `warps / SMs`.
    pub warps_per_sm: f64,
}

impl MemoryParallelism {
    /// Little's law for memory.
    pub fn new(
        latency_cycles: f64,
        bandwidth_gbps: f64,
        clock_ghz: f64,
        bytes_per_thread: f64,
        warp_size: u32,
        sms: u32,
    ) -> Self {
        let bytes_per_cycle = if clock_ghz > 0.0 { bandwidth_gbps / clock_ghz } else { 0.0 };
        let bytes_in_flight = bytes_per_cycle * latency_cycles;
        let threads = if bytes_per_thread > 0.0 { bytes_in_flight / bytes_per_thread } else { 0.0 };
        let warps = threads / warp_size.max(1) as f64;
        MemoryParallelism {
            latency_cycles,
            bandwidth_gbps,
            clock_ghz,
            bytes_per_cycle,
            bytes_in_flight,
            bytes_per_thread,
            threads,
            warps,
            warps_per_sm: warps / sms.max(1) as f64,
        }
    }
}

/// Everything the device query prints, for one device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceReport {
    /// `(property, value)` rows: the lesson's simpleDeviceQuery first.
    pub properties: Vec<(String, String)>,
    /// Arithmetic parallelism (`None` when the FP32 throughput of the
    /// architecture is unknown and none was given).
    pub arithmetic: Option<ArithmeticParallelism>,
    /// Memory parallelism.
    pub memory: MemoryParallelism,
    /// Warp slots per SM.
    pub max_warps_per_sm: u32,
    /// The assumptions used.
    pub assumptions: LittleAssumptions,
}

fn kib(bytes: u64) -> String {
    format!("{:.2} KB", bytes as f64 / 1024.0)
}

impl DeviceReport {
    /// The report of `info` under `assumptions`; `fp32_per_cycle`
    /// overrides the FP32 operations per SM per cycle of the table.
    pub fn new(info: &DeviceInfo, assumptions: LittleAssumptions, fp32_per_cycle: Option<f64>) -> DeviceReport {
        let l = &info.limits;
        let max_warps = l.max_threads_per_sm / l.warp_size.max(1);
        let mut p: Vec<(String, String)> = Vec::new();
        let mut row = |k: &str, v: String| p.push((k.to_string(), v));
        row("Device", format!("{}: {}", info.ordinal, info.name));
        row("Compute capability", format!("{}.{}", info.cc_major, info.cc_minor));
        row("Number of multiprocessors", info.sm_count.to_string());
        row("Total amount of constant memory", kib(u64::from(info.constant_bytes)));
        row("Total amount of shared memory per block", kib(u64::from(l.max_shared_per_block)));
        row("Total number of registers available per block", l.registers_per_block.to_string());
        row("Warp size", l.warp_size.to_string());
        row("Maximum number of threads per block", l.max_threads_per_block.to_string());
        row("Maximum number of threads per multiprocessor", l.max_threads_per_sm.to_string());
        row("Maximum number of warps per multiprocessor", max_warps.to_string());
        row("L2 cache size", kib(u64::from(info.l2_bytes)));
        row("Shared memory per multiprocessor", kib(u64::from(l.shared_per_sm)));
        row("Shared memory per block (opt-in)", kib(u64::from(l.max_shared_per_block_optin)));
        row("Shared memory reserved per block", format!("{} bytes", l.reserved_shared_per_block));
        row("Registers per multiprocessor", l.registers_per_sm.to_string());
        row("Maximum blocks per multiprocessor", l.max_blocks_per_sm.to_string());
        row("Memory clock rate", format!("{:.0} MHz", info.memory_clock_khz as f64 / 1e3));
        row("Memory bus width", format!("{} bits", info.memory_bus_bits));
        row(
            "Theoretical DRAM bandwidth",
            format!(
                "{:.1} GB/s (2 x {:.0} MHz x {} bytes; 1 GB = 1e9 B)",
                info.theoretical_dram_gbps(),
                info.memory_clock_khz as f64 / 1e3,
                info.memory_bus_bits / 8
            ),
        );
        let lanes = fp32_per_cycle.or_else(|| fp32_lanes_per_sm(info.cc_major, info.cc_minor).map(f64::from));
        DeviceReport {
            properties: p,
            arithmetic: lanes
                .map(|ops| ArithmeticParallelism::new(assumptions.arithmetic_latency_cycles, ops, l.warp_size)),
            memory: MemoryParallelism::new(
                assumptions.memory_latency_cycles,
                info.theoretical_dram_gbps(),
                info.memory_clock_khz as f64 / 1e6,
                assumptions.bytes_per_thread,
                l.warp_size,
                info.sm_count,
            ),
            max_warps_per_sm: max_warps,
            assumptions,
        }
    }

    /// The report as text: the properties, then the two Little's-law
    /// tables in the lesson's layout.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let w = self.properties.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &self.properties {
            let _ = writeln!(s, "{k:<w$}  {v}");
        }
        let _ =
            writeln!(s, "\nLittle's law: parallelism needed = latency x throughput (assumed latencies; override them)");
        match &self.arithmetic {
            Some(a) => {
                let _ = writeln!(s, "\narithmetic (32-bit floating-point multiply-add), per SM:");
                let _ = writeln!(
                    s,
                    "| latency (cycles) | throughput (ops/cycle/SM) | parallelism (ops) | warps per SM needed | of max |"
                );
                let _ = writeln!(s, "|---|---|---|---|---|");
                let _ = writeln!(
                    s,
                    "| {:.0} | {:.0} | {:.0} | {:.1} | {} |",
                    a.latency_cycles, a.ops_per_cycle, a.ops_in_flight, a.warps_per_sm, self.max_warps_per_sm
                );
            }
            None => {
                let _ = writeln!(s, "\narithmetic: FP32 throughput of this architecture unknown (give it as a flag)");
            }
        }
        let m = &self.memory;
        let _ = writeln!(s, "\nmemory (bandwidth converted to bytes per memory-clock cycle, as the lesson does):");
        let _ = writeln!(
            s,
            "| latency (cycles) | bandwidth (GB/s) | clock (GHz) | bandwidth (B/cycle) | parallelism (KB) | threads ({:.0} B each) | warps | warps per SM | of max |",
            m.bytes_per_thread
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
        let _ = writeln!(
            s,
            "| {:.0} | {:.1} | {:.3} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {} |",
            m.latency_cycles,
            m.bandwidth_gbps,
            m.clock_ghz,
            m.bytes_per_cycle,
            m.bytes_in_flight / 1000.0,
            m.threads,
            m.warps,
            m.warps_per_sm,
            self.max_warps_per_sm
        );
        let more = if m.warps_per_sm > self.max_warps_per_sm as f64 {
            "more than an SM can hold: each thread must keep several loads in flight (ILP, vector loads)"
        } else {
            "within what an SM holds, if occupancy allows it"
        };
        let _ = writeln!(s, "\n{:.1} warps per SM of {:.0}-byte loads: {more}", m.warps_per_sm, m.bytes_per_thread);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lesson_rows_are_reproduced() {
        // Fermi: 20 cycles x 32 ops = 640 ops = 20 warps; Kepler 20 x 192 = 3840.
        let f = ArithmeticParallelism::new(20.0, 32.0, 32);
        assert_eq!((f.ops_in_flight, f.warps_per_sm), (640.0, 20.0));
        assert_eq!(ArithmeticParallelism::new(20.0, 192.0, 32).ops_in_flight, 3840.0);
        // Fermi memory: 144 GB/s / 1.566 GHz = 92 B/cycle; x 800 = 74 KB;
        // / 4 B = 18 400 threads; / 32 = 575 warps; / 16 SMs = 36 per SM.
        let m = MemoryParallelism::new(800.0, 144.0, 1.566, 4.0, 32, 16);
        assert_eq!(m.bytes_per_cycle.round(), 92.0);
        assert_eq!((m.bytes_in_flight / 1000.0).round(), 74.0);
        assert_eq!((m.threads / 100.0).round(), 184.0);
        assert_eq!(m.warps.round(), 575.0);
        assert_eq!(m.warps_per_sm.round(), 36.0);
        // Kepler: 250 / 1.6 = 156 B/cycle (the lesson's table prints 96, which its own 1.6 GHz does not give).
        assert_eq!(MemoryParallelism::new(800.0, 250.0, 1.6, 4.0, 32, 13).bytes_per_cycle.round(), 156.0);
    }

    #[test]
    fn throughput_table() {
        assert_eq!(fp32_lanes_per_sm(9, 0), Some(128));
        assert_eq!(fp32_lanes_per_sm(7, 0), Some(64));
        assert_eq!(fp32_lanes_per_sm(8, 6), Some(128));
        assert_eq!(fp32_lanes_per_sm(6, 1), None);
    }

    #[test]
    fn degenerate_inputs_do_not_divide_by_zero() {
        let m = MemoryParallelism::new(800.0, 100.0, 0.0, 0.0, 0, 0);
        assert_eq!((m.bytes_per_cycle, m.threads, m.warps_per_sm), (0.0, 0.0, 0.0));
    }
}
