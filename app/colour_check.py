"""How far apart the token colours look, with normal vision and the common colour-vision
deficiencies: the simulation of Machado, Oliveira and Fernandes (2009) at full severity
(protanopia, deuteranopia, tritanopia; applied in linear sRGB) and the CIEDE2000 colour
difference in CIELAB (D65).

    python -m specscope.app.colour_check           # every palette, every pair of token classes

prints, for each palette, the smallest difference between two token classes under each vision
and the pair it belongs to; a palette every student can tell apart keeps it at 20 or more.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# Machado et al. (2009), severity 1.0, on linear RGB
CVD = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
_SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                         [0.2126729, 0.7151522, 0.0721750],
                         [0.0193339, 0.1191920, 0.9503041]])
_WHITE = np.array([0.95047, 1.0, 1.08883])


def _linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(hex_colour: str, vision: str = "normal") -> np.ndarray:
    """CIELAB (D65) of an sRGB colour as seen with ``vision``."""
    rgb = np.clip(CVD[vision] @ _linear(hex_colour), 0.0, 1.0)
    xyz = _SRGB_TO_XYZ @ rgb / _WHITE
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """The CIEDE2000 difference of two CIELAB colours (kL = kC = kH = 1; Sharma et al. 2005)."""
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360
    h2p = math.degrees(math.atan2(b2, a2p)) % 360
    dL, dC = L2 - L1, c2p - c1p
    if c1p * c2p == 0:
        dh = 0.0
    elif abs(h2p - h1p) <= 180:
        dh = h2p - h1p
    else:
        dh = h2p - h1p - 360 if h2p > h1p else h2p - h1p + 360
    dH = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    L_bar, C_bar = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    else:
        h_bar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_bar - 30)) + 0.24 * math.cos(math.radians(2 * h_bar))
         + 0.32 * math.cos(math.radians(3 * h_bar + 6)) - 0.20 * math.cos(math.radians(4 * h_bar - 63)))
    d_theta = 30 * math.exp(-(((h_bar - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(C_bar ** 7 / (C_bar ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (L_bar - 50) ** 2 / math.sqrt(20 + (L_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * C_bar, 1 + 0.015 * C_bar * t
    r_t = -math.sin(math.radians(2 * d_theta)) * r_c
    return math.sqrt((dL / s_l) ** 2 + (dC / s_c) ** 2 + (dH / s_h) ** 2
                     + r_t * (dC / s_c) * (dH / s_h))


def closest_pair(classes: dict[str, str], vision: str) -> tuple[float, str, str]:
    """(the smallest CIEDE2000 difference between two of ``classes`` ({name: colour}) as seen
    with ``vision``, the two names)."""
    seen = {name: lab(colour, vision) for name, colour in classes.items()}
    return min((ciede2000(seen[a], seen[b]), a, b) for a, b in itertools.combinations(seen, 2))


def report(palettes: dict[str, dict[str, str]]) -> list[str]:
    """A line per palette and vision: the closest pair of token classes and their difference."""
    lines = []
    for name, classes in palettes.items():
        lines.append(f"{name}: {', '.join(f'{k} {v}' for k, v in classes.items())}")
        for vision in CVD:
            d, a, b = closest_pair(classes, vision)
            lines.append(f"  {vision:<13} closest: {a} / {b}  ΔE2000 {d:5.1f}"
                         f"{'' if d >= 20 else '  (below 20)'}")
    return lines


def main() -> int:
    from .palette import PALETTES, token_classes
    for line in report({**{f"{name} (tokens)": token_classes(p) for name, p in PALETTES.items()},
                        **{f"{name} (plots)": dict(p.plots) for name, p in PALETTES.items()}}):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
