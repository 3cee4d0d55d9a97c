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
