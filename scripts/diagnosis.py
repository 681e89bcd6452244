"""What the diagnosis scripts beside this file share: their arguments, and one cluster's jobs
loaded as `asad bench predictors --key account` loads them."""

from __future__ import annotations

import argparse

import numpy as np

from asad.bench import predictors as bench


def parser(doc: str | None, *, cluster_default: str | None = None, split: str | None = "2021-06-10",
           until: str = "2021-07-07") -> argparse.ArgumentParser:
    """CLUSTER, ``--until`` and (unless ``split`` is None) ``--split``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if cluster_default is None:
        parser.add_argument("cluster")
    else:
        parser.add_argument("cluster", nargs="?", default=cluster_default)
    if split is not None:
        parser.add_argument("--split", default=split)
    parser.add_argument("--until", default=until)
    return parser


def load(args: argparse.Namespace) -> bench.Jobs:
    """The cluster's jobs eligible before ``--until``, keyed by account and geometry."""
    return bench.load_jobs(bench.DEFAULT_DATA, cluster=args.cluster, until=args.until,
                           key_config=bench.KEY_CONFIGS["account"])


def epoch_s(date: str) -> float:
    return float(np.datetime64(date, "s").astype(np.int64))
