#!/usr/bin/env python3
"""Times the peer rows that issues and docs quote beside `coalesce bench conv`:
PyTorch's conv1d / conv2d and CuPy's cupyx.scipy.ndimage filters on the same
workloads (f32 unless named), so that the comparison is made on one GPU.

Each row: 3 untimed calls, then 20 timed calls between CUDA events, the
median reported. Inputs are fresh standard-normal data (uniform 0..255 for
u8); no output is checked here (the peers are not the reference).

Usage: python3 scripts/peers.py [--out peers.json] [--only torch|cupy]
(needs torch with CUDA; the CuPy rows need cupy, and are skipped without it)
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

WARMUP, REPS = 3, 20


def time_ms(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def torch_rows(dev):
    rows = []
    g = torch.Generator(device=dev).manual_seed(2026)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device=dev, generator=g, dtype=torch.float32).to(dtype)

    # Single-channel conv1d, w = 127, n = 2^27 ('same' length, zero padding).
    x = randn(1, 1, 1 << 27)
    m = randn(1, 1, 127)
    rows.append(("torch conv1d n=2^27 w=127 f32", time_ms(lambda: F.conv1d(x, m, padding=63)), 2 * 4 * (1 << 27)))
    del x
    # Depthwise conv1d: C channels x L samples, one mask per channel.
    for c, length, w in [(64, 1 << 21, 31), (1024, 1 << 17, 7)]:
        for dt, name, size in [(torch.float32, "f32", 4), (torch.bfloat16, "bf16", 2)]:
            x = randn(1, c, length, dtype=dt)
            m = randn(c, 1, w, dtype=dt)
            t = time_ms(lambda: F.conv1d(x, m, padding=w // 2, groups=c))
            rows.append((f"torch depthwise conv1d {c}x{length} w={w} {name}", t, 2 * size * c * length))
            del x
    # Depthwise conv2d, RGB planes 3 x 4096^2, 5x5.
    for dt, name, size in [(torch.float32, "f32", 4), (torch.bfloat16, "bf16", 2)]:
        x = randn(1, 3, 4096, 4096, dtype=dt)
        m = randn(3, 1, 5, 5, dtype=dt)
        t = time_ms(lambda: F.conv2d(x, m, padding=2, groups=3))
        rows.append((f"torch depthwise conv2d 3x4096^2 5x5 {name}", t, 2 * size * 3 * 4096 * 4096))
    # Interleaved u8 RGB 4096^2, 5x5 box: to f32 planes, filter, round, back to u8.
    img = torch.randint(0, 256, (4096, 4096, 3), device=dev, dtype=torch.uint8, generator=g)
    box = torch.full((3, 1, 5, 5), 1.0 / 25.0, device=dev)

    def u8_box():
        planes = img.permute(2, 0, 1).unsqueeze(0).float()
        y = F.conv2d(planes, box, padding=2, groups=3)
        return y.round().clamp(0, 255).to(torch.uint8).squeeze(0).permute(1, 2, 0).contiguous()

    rows.append(("torch u8 RGB 4096^2 5x5 box (via f32)", time_ms(u8_box), 2 * 3 * 4096 * 4096))
    return rows


def cupy_rows():
    try:
        import cupy as cp
        from cupyx.scipy import ndimage
    except ImportError:
        print("cupy not found: CuPy rows skipped", file=sys.stderr)
        return []
    rows = []
    rng = cp.random.default_rng(2026)
    x = rng.standard_normal(1 << 27, dtype=cp.float32)
    m = rng.standard_normal(127, dtype=cp.float32)
    rows.append(("cupy correlate1d n=2^27 w=127", time_ms(lambda: ndimage.correlate1d(x, m, mode="constant")), 2 * 4 * (1 << 27)))
    del x
    x = rng.standard_normal((64, 1 << 21), dtype=cp.float32)
    m = rng.standard_normal(31, dtype=cp.float32)
    rows.append(("cupy correlate1d axis=-1 64x2^21 w=31", time_ms(lambda: ndimage.correlate1d(x, m, axis=-1, mode="constant")), 2 * 4 * x.size))
    del x
    img = rng.standard_normal((8192, 8192), dtype=cp.float32)
    for k in (3, 5, 7, 9, 15):
        mk = rng.standard_normal((k, k), dtype=cp.float32)
        rows.append((f"cupy correlate 8192^2 {k}x{k}", time_ms(lambda: ndimage.correlate(img, mk, mode="constant")), 2 * 4 * img.size))
    for s in (2, 5):
        rows.append((f"cupy gaussian_filter 8192^2 sigma={s}", time_ms(lambda: ndimage.gaussian_filter(img, s, mode="constant")), 2 * 4 * img.size))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="peers.json")
    ap.add_argument("--only", choices=["torch", "cupy"])
    args = ap.parse_args()
    dev = torch.device("cuda")
    rows = []
    if args.only in (None, "torch"):
        rows += torch_rows(dev)
        torch.cuda.empty_cache()
    if args.only in (None, "cupy"):
        rows += cupy_rows()
    name = torch.cuda.get_device_name(dev)
    print(f"# {name}, torch {torch.__version__}")
    print(f"{'workload':48} {'ms':>9} {'GB/s':>8}")
    for label, ms, nbytes in rows:
        print(f"{label:48} {ms:9.4f} {nbytes / ms / 1e6:8.1f}")
    with open(args.out, "w") as f:
        json.dump({"device": name, "torch": torch.__version__, "rows": [{"workload": l, "ms": t, "bytes": b} for l, t, b in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
