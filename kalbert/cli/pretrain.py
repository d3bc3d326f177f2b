"""`kalbert pretrain`: MLM + SOP pretraining (scratch or further-pretraining), one process or many."""

from __future__ import annotations

import argparse
import logging
import os

from kalbert.cli.common import positive_int

EXAMPLES = """examples:
  kalbert data build --vocab vocab/ko-32k --input kowiki --max-documents 5000 --out outputs/data-kowiki-5k
  kalbert pretrain --preset tiny --data outputs/data-kowiki-5k --out outputs/pretrain-tiny --steps 300
  kalbert pretrain --preset tiny --data outputs/data-kowiki-5k --out outputs/pretrain-tiny --steps 300 --resume
  kalbert pretrain --data outputs/data-kowiki-5k --init-from outputs/pretrain-tiny/model --objective mlm \\
      --out outputs/further --steps 100
  torchrun --nproc-per-node 2 -m kalbert pretrain --preset tiny --data outputs/data-kowiki-5k --out outputs/ddp
  kalbert pretrain --list-presets --vocab-size 30000"""


def register(nouns) -> None:
    parser = nouns.add_parser(
        "pretrain", help="pretrain an ALBERT model with MLM + SOP",
        description="Pretrain an ALBERT model (transformers AlbertForPreTraining) on data from `kalbert data build`. "
                    "The same command runs under torchrun / accelerate launch (DDP).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=_pretrain)
    io = parser.add_argument_group("data and output")
    io.add_argument("--data", help="data folder (kalbert data build)")
    io.add_argument("--out", help="run folder: checkpoints, metrics.jsonl, tb/, and the exported model/")
    io.add_argument("--vocab", help="refuse to start unless the data were built with this vocabulary")
    io.add_argument("--resume", action="store_true", help="continue from the newest intact checkpoint in --out")
    io.add_argument("--overwrite", action="store_true", help="delete an existing run in --out first")

    model = parser.add_argument_group("model")
    model.add_argument("--preset", default="tiny", choices=["tiny", "small", "base", "large"])
    model.add_argument("--embedding-size", type=positive_int, help="E (default: the preset's)")
    model.add_argument("--hidden-size", type=positive_int, help="H (default: the preset's)")
    model.add_argument("--num-layers", type=positive_int, help="L (default: the preset's)")
    model.add_argument("--num-heads", type=positive_int, help="attention heads (default: the preset's)")
    model.add_argument("--intermediate-size", type=positive_int, help="FFN width (default: the preset's)")
    model.add_argument("--sharing", default="all",
                       help="cross-layer sharing: all (ALBERT), none, or a number of layer groups")
    model.add_argument("--init-from", help="HF ALBERT folder to continue pretraining from (further-pretraining)")
    model.add_argument("--list-presets", action="store_true", help="print the presets' parameter counts and exit")
    model.add_argument("--vocab-size", type=positive_int, default=30000, help="vocabulary size for --list-presets")

    train = parser.add_argument_group("training")
    train.add_argument("--objective", default="mlm+sop", choices=["mlm+sop", "mlm"])
    train.add_argument("--steps", type=positive_int, default=10_000)
    train.add_argument("--batch-size", type=positive_int, default=128, help="global batch (instances per step)")
    train.add_argument("--grad-accum", type=positive_int, default=1, help="micro-batches per step and process")
    train.add_argument("--optimizer", default="lamb", choices=["lamb", "adamw"])
    train.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    train.add_argument("--weight-decay", type=float, default=0.01)
    train.add_argument("--warmup-fraction", type=float, default=0.025)
    train.add_argument("--max-grad-norm", type=float, default=1.0, help="clip the global gradient norm (0: off)")
    train.add_argument("--bf16", action="store_true", help="bf16 autocast (AVX512-BF16/AMX CPUs, recent GPUs)")
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--threads", type=int, default=0, help="torch CPU threads per process (0: default)")

    masking = parser.add_argument_group("masking")
    masking.add_argument("--mask-unit", default="morpheme", choices=["morpheme", "word", "token"])
    masking.add_argument("--mask-prob", type=float, default=0.15)
    masking.add_argument("--max-predictions", type=positive_int, default=20, help="per instance")
    masking.add_argument("--max-ngram", type=positive_int, default=3)

    report = parser.add_argument_group("evaluation, logging and checkpoints")
    report.add_argument("--eval-every", type=positive_int, default=500)
    report.add_argument("--eval-instances", type=positive_int, default=2000)
    report.add_argument("--log-every", type=positive_int, default=10)
    report.add_argument("--save-every", type=positive_int, default=1000)
    report.add_argument("--keep-checkpoints", type=positive_int, default=3)
    report.add_argument("--no-tensorboard", action="store_true")


def _list_presets(vocab_size: int) -> int:
    from kalbert.pretrain.presets import PRESETS, ModelConfig, albert_config, describe

    for name in PRESETS:
        print(f"{name:<6} {describe(albert_config(ModelConfig(preset=name), vocab_size))}")
    return 0


def _pretrain(args: argparse.Namespace) -> int:
    if args.list_presets:
        return _list_presets(args.vocab_size)
    from kalbert.errors import KalbertError

    if not args.data or not args.out:
        raise KalbertError("--data and --out are required", "see kalbert pretrain --help")
    from kalbert.pretrain import MaskingConfig, ModelConfig, PretrainConfig, pretrain

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = PretrainConfig(
        data=args.data, out=args.out, vocab=args.vocab, init_from=args.init_from, objective=args.objective,
        model=ModelConfig(preset=args.preset, embedding_size=args.embedding_size, hidden_size=args.hidden_size,
                          num_layers=args.num_layers, num_heads=args.num_heads,
                          intermediate_size=args.intermediate_size, sharing=args.sharing),
        masking=MaskingConfig(mask_prob=args.mask_prob, max_predictions=args.max_predictions,
                              max_ngram=args.max_ngram, unit=args.mask_unit),
        steps=args.steps, batch_size=args.batch_size, grad_accum=args.grad_accum, optimizer=args.optimizer,
        lr=args.lr, weight_decay=args.weight_decay, warmup_fraction=args.warmup_fraction,
        max_grad_norm=args.max_grad_norm, bf16=args.bf16, eval_every=args.eval_every,
        eval_instances=args.eval_instances, save_every=args.save_every, keep_checkpoints=args.keep_checkpoints,
        log_every=args.log_every, seed=args.seed, threads=args.threads, tensorboard=not args.no_tensorboard,
        resume=args.resume,
    )
    out = pretrain(config, overwrite=args.overwrite)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"model: {out}")
    return 0
