#!/usr/bin/env python3
"""Writes tests/fixtures/scipy_conv1d.json: outputs of scipy.ndimage.correlate1d
and convolve1d for every boundary mode on small random float64 inputs, odd and
even mask widths, masks wider than the input. The CPU reference is checked
against it by tests/conv1d.rs, which needs no scipy.

Usage: python3 scripts/scipy_conv1d_fixture.py   (needs numpy and scipy)
"""
import json
import pathlib

import numpy as np
import scipy
from scipy import ndimage

MODES = {"zero": "constant", "nearest": "nearest", "reflect": "reflect", "mirror": "mirror", "wrap": "wrap"}
rng = np.random.default_rng(20261122)
cases = []
for n in [1, 2, 3, 5, 8, 17]:
    for w in [1, 2, 3, 4, 5, 6, 7, 10, 31]:
        x = rng.standard_normal(n)
        m = rng.standard_normal(w)
        for ours, theirs in MODES.items():
            for op, fn in [("correlate", ndimage.correlate1d), ("convolve", ndimage.convolve1d)]:
                y = fn(x, m, mode=theirs, cval=0.0)
                cases.append({"mode": ours, "op": op, "input": x.tolist(), "mask": m.tolist(), "output": y.tolist()})
out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "scipy_conv1d.json"
out.write_text(json.dumps({"scipy": scipy.__version__, "cases": cases}))
print(f"{out}: {len(cases)} cases (scipy {scipy.__version__})")
