"""SST-2 dev accuracy vs sparsity, ALBERT (one shared block) vs BERT (4 blocks), issue #28.

Runs (or resumes: finished stages are skipped) ``albert-tf-run
--experiment=run_sparsity_albert_vs_bert`` in ``--output_dir``, then reads its recorded
stages (``<output_dir>/stages/*.json`` and ``compress/<model>+prune<s>/sparsity.md``) into
one row per model and sparsity: the dense finetuned model (0%) and each TF-MOT
magnitude-pruned one, with the Keras dev accuracy (best finetuning checkpoint, or after
the pruning stage), the dev accuracy of the exported float TFLite file, the achieved
sparsity of the pruned weights and the zeros' share of all parameters.

The pruning stage trains 200 more steps than the dense model had, so a control row per
model, "0% + same steps", runs the same stage (``compress/<model>+prune0.5/compression.yaml``)
at final sparsity 0 into ``<output_dir>/control/<model>+prune0`` (albert-tf-compress, Keras
dev accuracy only): a pruned model's drop is read against it. Prints the markdown table and
draws ``docs/sparsity_albert_vs_bert.png`` (TFLite dev accuracy vs target sparsity, dense
at 0%, one line per model; the controls as crosses). ``--run=false`` only reads an existing
run.

    make figures NAME=sparsity-albert-vs-bert [ARGS="--output_dir=/tmp/sparsity_run"]
    python studies/sparsity_albert_vs_bert/run.py --run=false --output_dir=/tmp/sparsity_run

A driver: the reading, table and plot are `albert_tf.pipeline.sparsity_report`; the data root
of the run is ``--data_dir`` or ``$ALBERT_TF_DATA_DIR``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from albert_tf.pipeline import sparsity_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOT = os.path.join(ROOT, "docs", "sparsity_albert_vs_bert.png")


def parse(argv):
    """The report's flags (`sparsity_report.build_parser`, plot in docs/) plus the run's."""
    p = sparsity_report.build_parser(PLOT, __doc__.split("\n")[0])
    p.add_argument("--data_dir", default=None,
                   help="data root of the run (default $ALBERT_TF_DATA_DIR)")
    p.add_argument("--run", default="true", choices=["true", "false"],
                   help="false: only read an existing --output_dir")
    return p.parse_args(argv)


def run(output_dir: str, data_dir: str) -> None:
    """``albert-tf-run --experiment=run_sparsity_albert_vs_bert`` (resumed when partly
    done) on the data root ``data_dir``, then the 0% controls."""
    start = time.time()
    command = [os.path.join(os.path.dirname(sys.executable), "albert-tf-run"),
               f"--experiment={sparsity_report.EXPERIMENT}", f"--output_dir={output_dir}",
               f"--data_dir={data_dir}"]
    print(" ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)
    sparsity_report.run_controls(output_dir, cwd=ROOT)
    print(f"albert-tf-run and the controls: {(time.time() - start) / 60:.1f} min wall "
          "(this call)")


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.run == "true":
        from albert_tf import resources
        try:
            data_dir = resources.data_dir(args.data_dir)
        except resources.DataDirError as error:     # one line, before anything runs
            sys.exit(f"studies/sparsity_albert_vs_bert/run.py: error: {error}")
        run(args.output_dir, data_dir)
    sparsity_report.report(args.output_dir, args.plot, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
