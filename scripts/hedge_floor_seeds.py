"""Read scripts/hedge_floor_seeds.sh's replays (issue 38, thirteenth round; tuning windows only):
the ninth round's rule's cells and verdict for the per-floor-share draw and the per-cluster draw
under one seed. ``python scripts/hedge_floor_seeds.py graham:S1-graham.json cedar:S1-cedar.json``"""

from __future__ import annotations

import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge_account import cli  # noqa: E402
from tune_hedge_floor import CANDIDATES  # noqa: E402

DRAWS = {"h-fl-win-told-a20": CANDIDATES["h-fl-win-told-a20"],
         "h-win-told-a20": {"hedge_top": "learners", "hedge_top_combine": "draw", "hedge_top_loss": "win",
                            "hedge_top_eta": 1, "hedge_top_told": True, "aci_cold_adapt_max": 0.02,
                            "aci_cold_adapt_halflife": 50}}

if __name__ == "__main__":
    raise SystemExit(cli(sys.argv[1:], DRAWS, "hedge_floor_seeds.py"))
