#!/usr/bin/env python3
"""Writes tests/fixtures/scipy_conv2d.json: outputs of scipy.ndimage.correlate
and scipy.ndimage.convolve (float64) for small images, every mode, odd and
even mask sizes, masks larger than an image axis. tests/conv2d.rs checks the
CPU reference against it (no scipy needed there).

    python3 scripts/scipy_conv2d_fixture.py
"""
import json
import os

import numpy as np
import scipy
from scipy import ndimage

MODES = {"zero": "constant", "nearest": "nearest", "reflect": "reflect", "mirror": "mirror", "wrap": "wrap"}
SHAPES = [(5, 7), (1, 6), (6, 1), (4, 4)]  # (height, width)
MASKS = [(3, 3), (2, 4), (7, 3), (1, 1), (2, 5)]  # (mh, mw)


def main():
    rng = np.random.default_rng(2026)
    cases = []
    for h, w in SHAPES:
        img = np.round(rng.uniform(-4, 4, size=(h, w)), 3)
        for mh, mw in MASKS:
            mask = np.round(rng.uniform(-1, 1, size=(mh, mw)), 3)
            for name, mode in MODES.items():
                for op in ("correlate", "convolve"):
                    f = ndimage.correlate if op == "correlate" else ndimage.convolve
                    out = f(img, mask, mode=mode, cval=0.0)
                    cases.append({
                        "width": w, "height": h, "mw": mw, "mh": mh, "op": op, "mode": name,
                        "input": img.ravel().tolist(), "mask": mask.ravel().tolist(),
                        "expected": out.ravel().tolist(),
                    })
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "scipy_conv2d.json")
    with open(path, "w") as fh:
        json.dump({"scipy": scipy.__version__, "cases": cases}, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
