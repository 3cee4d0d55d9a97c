//! The `constant` suite (lesson 004, "constant memory"): the time of one table read when the 32 lanes of a warp
//! read one address (broadcast) or 32 different ones (serialized), from constant memory and, with the same index
//! patterns, from global memory.
//!
//! Each of `threads` threads folds `iters` reads of a 256-word table into one result ([`crate::constant`]); every
//! kernel's output is checked against the rayon reference. The figures are GPU-wide rates, not latencies. The
//! lesson's model: a constant read costs one request per distinct address in the warp, so `constant_serialized`
//! should take up to 32× the broadcast's time per access, while global memory serves the serialized pattern (32
//! consecutive words, one 128-byte line) about as fast as the broadcast.

use super::run::{Common, POISON, Rec, Run, Suite, elems, parse_elems};
use super::{BenchResult, SuiteInfo};
use crate::constant::{self, ConstantVariant, Memory, TABLE_LEN, WARP};

/// `coalesce bench constant`.
#[derive(clap::Args, Clone, Debug)]
pub struct Constant {
    /// Threads (one result each) [default: 2^20, 2^16 with --quick].
    #[arg(long, value_parser = parse_elems)]
    pub threads: Option<u64>,
    /// Table reads per thread [default: 1024, 256 with --quick].
    #[arg(long)]
    pub iters: Option<u32>,
    /// Kernels, comma-separated (constant_broadcast, constant_serialized, global_broadcast,
    /// global_serialized) [default: all].
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<ConstantVariant>>,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// The table's values: distinct, non-zero words.
pub fn table_values() -> Vec<u32> {
    (0..TABLE_LEN).map(super::copy::pattern_word).collect()
}

impl Suite for Constant {
    const INFO: SuiteInfo = SuiteInfo {
        name: "constant",
        about: "constant memory: warp broadcast vs serialized reads, and the same patterns from global memory",
    };
    const UNITS: &'static str = "times in ms per launch; ns per warp-access = time / (warps x iters), ns per \
                                 thread-access = time / (threads x iters): GPU-wide rates, not latencies";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (n, iters) = (elems(run.pick(self.threads, 1 << 20, 1 << 16))?, run.pick(self.iters, 1024, 256));
        if n == 0 || iters == 0 {
            return Err(run.bad_options("--threads and --iters must be at least 1"));
        }
        let warps = n.div_ceil(WARP);
        [("threads", n), ("warps", warps), ("iters", iters as usize)].into_iter().for_each(|(k, v)| run.param(k, v));
        run.line(format!("{n} threads ({warps} warps) x {iters} reads of a {TABLE_LEN}-word table"));
        let values = table_values();
        let (table, mut out) = (run.gpu.constant_table(&values)?, run.gpu.alloc_zeroed::<u32>(n)?);
        let variants = self.variants.clone().unwrap_or(ConstantVariant::ALL.to_vec());
        let mut measured = Vec::new();
        run.progress(variants.len());
        for &v in &variants {
            run.tick(v.kernel());
            let stats = run.measure(|_| table.run(v, &mut out.as_view_mut(), iters).map(drop).map_err(Into::into))?;
            out.fill_bytes(POISON)?;
            table.run(v, &mut out.as_view_mut(), iters)?;
            run.check(v.kernel(), &out.to_vec()?, &constant::reference(&values, v.pattern(), n, iters)?)?;
            measured.push((v, stats));
            run.inc();
        }
        let base = measured.iter().find(|m| m.0 == ConstantVariant::ConstantBroadcast).map(|m| m.1.median_ms);
        let t = run.table("kernels", "");
        for (v, stats) in measured {
            let (ms, reads) = (stats.median_ms, f64::from(iters));
            let memory = if v.memory() == Memory::Constant { "constant" } else { "global" };
            let r = Rec::new().text("kernel", v.kernel()).text("memory", memory).text("pattern", v.pattern().name());
            let r = r.int("words/warp", v.pattern().distinct_per_warp()).num("ms", ms, 3);
            let r = r.num("ns/warp-access", ms * 1e6 / (warps as f64 * reads), 4);
            let r = r.num("ns/thread-access", ms * 1e6 / (n as f64 * reads), 5);
            run.row(t, r.times("time / const broadcast", base.map(|b| ms / b)).json("stats", stats));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_values_and_options() {
        let v = table_values();
        let distinct: std::collections::HashSet<u32> = v.iter().copied().collect();
        assert!(v.len() == TABLE_LEN && distinct.len() == TABLE_LEN && !v.contains(&0), "{v:?}");
        let c: Constant = super::super::run::parse(&["--threads", "2^10", "--quick"]).unwrap();
        assert_eq!((c.threads, c.iters, c.common.quick), (Some(1024), None, true));
    }
}
