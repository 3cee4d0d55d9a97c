//! The `local` suite (lesson 004, §5.3.2): a per-thread 16-bin histogram of `n` words kept in local memory, as
//! the data indexes it (`local_histogram_dynamic`), or in registers (`local_histogram_registers`). Bytes = words
//! read + counts written; floor: those at `cuMemcpyDtoD` speed. Counts are poisoned and checked on the CPU. No goal.

use rayon::prelude::*;

use super::run::{POISON, Rec, Run, Suite};
use super::{BenchResult, SuiteInfo};
use crate::local::{BINS, HistogramVariant, counts_len, reference_histogram};

/// `coalesce bench local`.
#[derive(clap::Args, Clone, Debug)]
pub struct Local {
    /// The bin of a word v is (v >> shift) % 16.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(..32))]
    pub shift: u32,
    /// Grid size in waves of resident blocks.
    #[arg(long, default_value_t = 1)]
    pub waves: u32,
    /// Words histogrammed: a number or 2^k [default: 2^26, 2^22 with --quick].
    #[arg(long, value_parser = super::run::parse_elems)]
    pub elems: Option<u64>,
    #[command(flatten)]
    common: super::run::Common,
}

impl Suite for Local {
    const INFO: SuiteInfo = SuiteInfo {
        name: "local",
        about: "per-thread 16-bin histogram of 2^26 words: array in local memory (run-time index) vs in registers",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes = words read + counts written; times in ms per launch; % of \
                                 floor = those bytes at cuMemcpyDtoD speed / kernel time";

    fn common(&self) -> &super::run::Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (n, shift, gpu) = (super::run::elems(run.pick(self.elems, 1 << 26, 1 << 22))?, self.shift, run.gpu);
        let n = std::num::NonZeroUsize::new(n).ok_or_else(|| run.bad_options("--elems must be at least 1"))?.get();
        let [a, b] = HistogramVariant::ALL.map(|v| gpu.histogram_blocks(v, self.waves));
        let blocks = a?.min(b?);
        let (len, words, per_block) = (counts_len(blocks), 4 * n as u64, counts_len(1) / BINS);
        let (threads, bytes, dtod) = ((len / BINS) as u64, (words + 4 * len as u64) as f64, run.dtod(words)?);
        let grid = format!("{BINS} bins of (v >> {shift}) % {BINS}, {blocks} blocks x {per_block} threads");
        let size = crate::text::human_bytes(words);
        run.line(format!("{n} words ({size}), {grid}; cuMemcpyDtoD {:.1} GB/s", dtod.gbps));
        let host: Vec<u32> = (0..n).into_par_iter().map(super::copy::pattern_word).collect();
        let mut want = vec![0u32; len];
        reference_histogram(&host, shift, &mut want)?;
        let (data, mut counts, t) = (gpu.upload(&host)?, gpu.alloc_zeroed::<u32>(len)?, run.table("variants", ""));
        let d = data.as_view();
        for v in HistogramVariant::ALL {
            let go = |c: &mut crate::DeviceBuffer<u32>| gpu.local_histogram(v, &d, &mut c.as_view_mut(), shift, blocks);
            let stats = run.measure(|_| Ok(go(&mut counts).map(drop)?))?;
            counts.fill_bytes(POISON)?;
            go(&mut counts)?;
            run.check(&format!("{} counts (bin-major, {threads} threads)", v.kernel()), &counts.to_vec()?, &want)?;
            let (l, ms) = (gpu.kernel_limits(v.kernel())?, stats.median_ms);
            let rec = Rec::new().text("array in", v.name()).text("kernel", v.kernel()).json("threads", threads);
            let rec = rec.int("registers", l.registers_per_thread).int("local B/thread", l.local_bytes_per_thread);
            let rec = rec.num("ms", ms, 3).num("GB/s", super::harness::gbps(bytes, ms), 1).json("blocks", blocks);
            run.row(t, rec.pct("% of floor", dtod.floor_ms(bytes) / ms).json("stats", stats));
        }
        let ms: Vec<f64> = run.rows(t).iter().filter_map(|r| r.get("ms")).collect();
        run.line(format!("local-memory time / register time: {:.2}x", ms[0] / ms[1]));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_parse() {
        let l: super::Local = super::super::run::parse(&["--elems", "2^20", "--shift", "4", "--quick"]).unwrap();
        assert_eq!((l.elems, l.shift, l.waves, l.common.quick), (Some(1 << 20), 4, 1, true));
        assert!(super::super::run::parse::<super::Local>(&["--shift", "32"]).is_err());
    }
}
