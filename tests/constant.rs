//! Constant memory (lesson 004): the broadcast and serialized kernels, from
//! constant and from global memory, on the GPU against the rayon
//! reference: fresh random tables, thread counts that are and are not
//! whole warps and blocks, poisoned outputs whose tail must stay poisoned,
//! the symbol written by name and read back, a second table replacing the
//! first in constant memory, and the error paths.

mod common;

use coalesce::constant::{self, ConstantVariant, Pattern, TABLE_LEN, TABLE_SYMBOL};
use coalesce::{ConstantTable, Error, Gpu};
use common::POISON;

/// Words after each output that no kernel may write.
const PAD: usize = 37;

/// A random table (distinct from a zero table with overwhelming
/// probability; asserted).
fn random_table(rng: &mut rand::rngs::StdRng) -> Vec<u32> {
    common::random_u32(rng, TABLE_LEN)
}

/// Runs `variant` with `n` threads and `iters` reads, compares with the
/// reference and checks the tail past `n` was not written.
fn check(gpu: &Gpu, table: &ConstantTable, variant: ConstantVariant, n: usize, iters: u32, ctx: &str) {
    let mut out = gpu.alloc_zeroed::<u32>(n + PAD).unwrap();
    out.fill_bytes(POISON).unwrap();
    let cfg = table.run(variant, &mut out.view_mut(0..n).unwrap(), iters).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert!(cfg.grid.x as usize * cfg.block.x as usize >= n, "{ctx}: grid {cfg}");
    let got = out.to_vec().unwrap();
    let want = constant::reference(table.values(), variant.pattern(), n, iters).unwrap();
    if let Some((t, g, w)) = coalesce::reference::first_mismatch(&got[..n], &want).unwrap() {
        let never = if g == u32::from_ne_bytes([POISON; 4]) { " (never written: still the poison)" } else { "" };
        panic!("{ctx}: thread {t} wrote {g:#010x}, expected {w:#010x}{never}");
    }
    let poison = u32::from_ne_bytes([POISON; 4]);
    assert!(got[n..].iter().all(|&w| w == poison), "{ctx}: wrote past the {n} outputs");
}

#[test]
fn every_kernel_matches_the_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let values = random_table(&mut rng);
    let table = gpu.constant_table(&values).unwrap();
    for n in [1, 31, 32, 33, 255, 256, 257, 1000, 4099, common::big(1 << 18, 1 << 12)] {
        for iters in [1, 7, 64, 300] {
            for v in ConstantVariant::ALL {
                check(&gpu, &table, v, n, iters, &format!("{} n={n} iters={iters} seed={seed}", v.kernel()));
            }
        }
    }
}

#[test]
fn the_symbol_holds_the_table_written_by_name() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let values = random_table(&mut rng);
    let _table = gpu.constant_table(&values).unwrap();
    assert_eq!(gpu.symbol_size(TABLE_SYMBOL).unwrap(), 4 * TABLE_LEN);
    assert_eq!(gpu.read_symbol::<u32>(TABLE_SYMBOL).unwrap(), values, "seed={seed}");
}

#[test]
fn a_later_table_replaces_the_constant_data_and_back() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let a = gpu.constant_table(&random_table(&mut rng)).unwrap();
    let b = gpu.constant_table(&random_table(&mut rng)).unwrap();
    assert_ne!(a.values(), b.values(), "seed={seed}");
    // b was written last; running a must put a's values back, then b's.
    for (name, t) in [("a", &a), ("b", &b), ("a again", &a)] {
        for v in [ConstantVariant::ConstantBroadcast, ConstantVariant::ConstantSerialized] {
            check(&gpu, t, v, 777, 33, &format!("table {name}, {} seed={seed}", v.kernel()));
        }
    }
}

#[test]
fn the_two_patterns_really_differ() {
    // Guards the checks above against a reference that ignores the
    // pattern: on a random table the broadcast and serialized folds of a
    // thread differ unless it is lane 0 (where both indices coincide).
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let values = random_table(&mut rng);
    let table = gpu.constant_table(&values).unwrap();
    let n = 4096;
    let mut b = gpu.alloc_zeroed::<u32>(n).unwrap();
    let mut s = gpu.alloc_zeroed::<u32>(n).unwrap();
    table.run(ConstantVariant::ConstantBroadcast, &mut b.as_view_mut(), 16).unwrap();
    table.run(ConstantVariant::GlobalSerialized, &mut s.as_view_mut(), 16).unwrap();
    let (b, s) = (b.to_vec().unwrap(), s.to_vec().unwrap());
    let lane0_same = (0..n).step_by(32).all(|t| b[t] == s[t]);
    let others_differ = (0..n).filter(|t| t % 32 != 0).filter(|&t| b[t] != s[t]).count();
    assert!(lane0_same, "seed={seed}");
    assert!(others_differ > n * 31 / 32 - 8, "only {others_differ} threads differ (seed={seed})");
    assert_eq!(b, constant::reference(&values, Pattern::Broadcast, n, 16).unwrap(), "seed={seed}");
    assert_eq!(s, constant::reference(&values, Pattern::Serialized, n, 16).unwrap(), "seed={seed}");
}

#[test]
fn bad_tables_and_empty_outputs() {
    let gpu = gpu_or_skip!();
    let e = gpu.constant_table(&[1u32; TABLE_LEN - 1]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: TABLE_LEN, got, .. } if got == TABLE_LEN - 1), "{e}");
    let e = gpu.constant_table(&vec![1u32; TABLE_LEN + 1]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let table = gpu.constant_table(&[3u32; TABLE_LEN]).unwrap();
    let mut out = gpu.alloc_zeroed::<u32>(4).unwrap();
    // No threads: nothing launched, nothing written.
    table.run(ConstantVariant::GlobalBroadcast, &mut out.view_mut(0..0).unwrap(), 10).unwrap();
    assert_eq!(out.to_vec().unwrap(), [0; 4]);
}
