#!/usr/bin/env python3
"""Writes tests/fixtures/scipy_params.json: outputs of scipy.ndimage.correlate1d,
convolve1d and gaussian_filter1d on small random float64 2D arrays, exercising
the parameters of the batched filters: `axis` (0, 1, -1), `origin` (both ends of
scipy's range and 0), `cval` (constant mode), every boundary mode, odd and even
mask widths, a mask wider than the signal, and for the Gaussian `sigma` and
`truncate`. tests/scipy_params.rs checks the CPU reference of the batched
filters against it (no scipy needed there).

The correlate1d/convolve1d cases sample the parameter space so that, for every
mode and both operations, every width and origin meets every shape and axis
(and, in constant mode, every cval); the Gaussian cases take the full product.

It also writes tests/fixtures/scipy_params2d.json: outputs of
scipy.ndimage.correlate, convolve and gaussian_filter on small random float64
images, for the 2D channels filters (conv::channels::Filter2d):
`origin = (origin_y, origin_x)` (each at both ends of scipy's range for its
axis's mask width, and 0), `cval` (constant mode), every boundary mode, odd,
even and non-square masks and one larger than the image on both axes, and for
the Gaussian `sigma` per axis and `truncate`. tests/scipy_params2d.rs checks
the CPU reference (reference_batch::filter2d) and the GPU filter against it.

The 2D correlate/convolve cases give, for every mode and both operations,
every mask every origin value on each axis (and, in constant mode, every
cval), walking the image shapes in a per-(mode, op) order; the Gaussian
cases take the full product of sigmas, truncates and modes. The 2D cases
draw from their own generator, so the 1D fixture does not change.

Usage: python3 scripts/scipy_params_fixture.py   (needs numpy and scipy)
"""
import json
import pathlib

import numpy as np
import scipy
from scipy import ndimage

MODES = {"zero": "constant", "nearest": "nearest", "reflect": "reflect", "mirror": "mirror", "wrap": "wrap"}
OPS = {"correlate1d": ndimage.correlate1d, "convolve1d": ndimage.convolve1d}
SHAPES = [(3, 7), (5, 4), (1, 9), (6, 1), (2, 2)]  # (rows, cols)
AXES = [0, 1, -1]
WIDTHS = [1, 2, 3, 4, 5, 6, 7, 11]  # 11: wider than every signal
CVALS = [0.0, 2.5, -1.25]
SIGMAS = [0.7, 1.5, 3.0]
TRUNCATES = [1.0, 2.5, 4.0]

rng = np.random.default_rng(20261124)
cases = []


def case(kind, x, axis, mode, cval, y, **extra):
    rows, cols = x.shape
    return {
        "kind": kind,
        "rows": rows,
        "cols": cols,
        "input": x.ravel().tolist(),
        **extra,
        "axis": axis,
        "mode": mode,
        "cval": cval,
        "output": y.ravel().tolist(),
    }


# Every (shape, axis) pair; each (mode, op) walks all of them in its own order.
pairs = [(s, a) for s in SHAPES for a in AXES]
for ours, theirs in MODES.items():
    cvals = CVALS if ours == "zero" else [0.0]
    for kind, fn in OPS.items():
        order = rng.permutation(len(pairs))
        k = 0
        for w in WIDTHS:
            for origin in sorted({-(w // 2), 0, (w - 1) // 2}):
                for cval in cvals:
                    (rows, cols), axis = pairs[order[k % len(pairs)]]
                    k += 1
                    x = rng.standard_normal((rows, cols))
                    m = rng.standard_normal(w)
                    y = fn(x, m, axis=axis, mode=theirs, cval=cval, origin=origin)
                    cases.append(case(kind, x, axis, ours, cval, y, mask=m.tolist(), origin=origin))
        assert k >= len(pairs), (ours, kind, k)

for ours, theirs in MODES.items():
    cval = 2.5 if ours == "zero" else 0.0
    k = 0
    for sigma in SIGMAS:
        for truncate in TRUNCATES:
            for axis in [0, 1]:
                rows, cols = SHAPES[k % len(SHAPES)]
                k += 1
                x = rng.standard_normal((rows, cols))
                y = ndimage.gaussian_filter1d(x, sigma, axis=axis, mode=theirs, cval=cval, truncate=truncate)
                cases.append(case("gaussian_filter1d", x, axis, ours, cval, y, sigma=sigma, truncate=truncate, origin=0))

out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "scipy_params.json"
out.write_text(json.dumps({"scipy": scipy.__version__, "cases": cases}))
counts = {kind: sum(c["kind"] == kind for c in cases) for kind in [*OPS, "gaussian_filter1d"]}
summary = ", ".join(f"{n} {kind}" for kind, n in counts.items())
print(f"{out}: {len(cases)} cases ({summary}; scipy {scipy.__version__}, {out.stat().st_size} bytes)")


# ---- 2D: tests/fixtures/scipy_params2d.json ----------------------------------

OPS2D = {"correlate": ndimage.correlate, "convolve": ndimage.convolve}
SHAPES2D = [(5, 7), (7, 5), (1, 9), (9, 1), (2, 12), (12, 2), (9, 7), (2, 5), (1, 1), (5, 2)]  # (height, width)
MASKS2D = [(1, 1), (3, 3), (2, 4), (5, 3), (4, 4), (7, 2)]  # (mh, mw)
BIG_MASK = (8, 13)  # (mh, mw): taller and wider than every image it meets
BIG_SHAPES = [s for s in SHAPES2D if s[0] < BIG_MASK[0] and s[1] < BIG_MASK[1]]
SIGMAS2D = [(0.7, 1.5), (1.5, 1.5), (3.0, 0.8)]  # (sigma_y, sigma_x)

rng2 = np.random.default_rng(20261125)
cases2d = []


def case2d(kind, x, mode, cval, y, **extra):
    height, width = x.shape
    return {
        "kind": kind,
        "height": height,
        "width": width,
        "input": x.ravel().tolist(),
        **extra,
        "mode": mode,
        "cval": cval,
        "output": y.ravel().tolist(),
    }


def origins(w):
    """scipy's origin range for a w-tap axis: both ends and 0."""
    return sorted({-(w // 2), 0, (w - 1) // 2})


def origin_pairs(mh, mw):
    """(origin_y, origin_x): the four corners of scipy's range and the
    centre, so every value of each axis appears."""
    ys, xs = origins(mh), origins(mw)
    pairs = [(ys[0], xs[-1]), (0, 0), (ys[-1], xs[0]), (ys[0], xs[0]), (ys[-1], xs[-1])]
    out = []
    for p in pairs:
        if p not in out:
            out.append(p)
    return out


for ours, theirs in MODES.items():
    cvals = CVALS if ours == "zero" else [0.0]
    for kind, fn in OPS2D.items():
        order = rng2.permutation(len(SHAPES2D))
        k = 0
        for mh, mw in [*MASKS2D, BIG_MASK]:
            pairs = origin_pairs(mh, mw)
            for j in range(max(len(pairs), len(cvals))):
                (oy, ox), cval = pairs[j % len(pairs)], cvals[(j + k) % len(cvals)]
                if (mh, mw) == BIG_MASK:
                    height, width = BIG_SHAPES[k % len(BIG_SHAPES)]
                else:
                    height, width = SHAPES2D[order[k % len(SHAPES2D)]]
                k += 1
                x = rng2.standard_normal((height, width))
                m = rng2.standard_normal((mh, mw))
                y = fn(x, m, mode=theirs, cval=cval, origin=(oy, ox))
                cases2d.append(
                    case2d(kind, x, ours, cval, y, mask=m.ravel().tolist(), mh=mh, mw=mw, origin_y=oy, origin_x=ox)
                )
        assert k >= len(SHAPES2D), (ours, kind, k)

for ours, theirs in MODES.items():
    cval = 2.5 if ours == "zero" else 0.0
    k = 0
    for sy, sx in SIGMAS2D:
        for truncate in TRUNCATES:
            height, width = SHAPES2D[k % len(SHAPES2D)]
            k += 1
            x = rng2.standard_normal((height, width))
            y = ndimage.gaussian_filter(x, (sy, sx), mode=theirs, cval=cval, truncate=truncate)
            extra = {"sigma_y": sy, "sigma_x": sx, "truncate": truncate, "origin_y": 0, "origin_x": 0}
            cases2d.append(case2d("gaussian_filter", x, ours, cval, y, **extra))

out2d = out.parent / "scipy_params2d.json"
out2d.write_text(json.dumps({"scipy": scipy.__version__, "cases": cases2d}))
counts = {kind: sum(c["kind"] == kind for c in cases2d) for kind in [*OPS2D, "gaussian_filter"]}
summary = ", ".join(f"{n} {kind}" for kind, n in counts.items())
print(f"{out2d}: {len(cases2d)} cases ({summary}; scipy {scipy.__version__}, {out2d.stat().st_size} bytes)")
