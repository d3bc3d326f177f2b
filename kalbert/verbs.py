"""Every verb of the ``kalbert`` command, one record each: its help and example, its config, the function that runs
it, the kind of artifact it makes and the inputs it takes.

Everything else is derived from these records, so a verb is declared once: the CLI builds each verb's parser
from its record (:func:`kalbert.cli.common.add_verb`), recipes (:mod:`kalbert.recipe`) name stages by the verbs
that make artifacts, the "make one with ..." hints list the verbs that make a kind (:func:`makers`), inputs are
checked from the declaration (:meth:`Verb.check`), on the command line and before a recipe stage alike, and the
command every artifact's record keeps is rendered from the record (:func:`command_for`). Config classes and
functions are named as ``module:attribute`` and imported on use: the functions import torch, and a config module
still costs an import that a noun's --help need not wait for.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kalbert.artifact import Kind
from kalbert.config import config_values, render_command
from kalbert.errors import KalbertError, WrongKind
from kalbert.inputs import (
    ENCODER_START,
    RERANKER,
    RERANKER_START,
    SEARCH_INDEX,
    SENTENCE_MODELS,
    SENTENCE_START,
    TOKENIZER,
    TRANSPLANT_TEACHER,
    Choices,
    Data,
    File,
    Folder,
    Input,
    Output,
    Sources,
    Teacher,
    check_inputs,
)


@dataclass(frozen=True)
class Verb:
    """One verb of the ``kalbert`` command."""

    name: str
    """the words after ``kalbert``, e.g. "sbert train" """
    help: str
    """one line: what it does, in ``kalbert NOUN --help`` and atop its own --help"""
    example: str
    """working command lines, one per line, that end its --help"""
    config: str | None = None
    """its config dataclass, "module:Class", whose settings are its flags; None: its CLI module declares them"""
    function: str | None = None
    """the function that makes its artifact, "module:function", called as ``function(config, overwrite=...)``
    (set exactly for the verbs that make one)"""
    kind: Kind | None = None
    """the ``kind`` its function's output folder records in kalbert.json; None: it makes no artifact from a config
    (copies such as ``qa export`` included), or keeps its input's (``keeps_kind``)"""
    keeps_kind: bool = False
    """it writes a new version of the folder it reads, of that folder's kind (``vocab normalize``)"""
    record: str = ""
    """where under ``--out`` the finished artifact's record is ("model" for pretraining, whose run folder holds
    checkpoints and the exported model); "" for ``--out`` itself"""
    positional: tuple[str, ...] = ()
    """settings given without their flag on the command line"""
    config_stage: str | None = None
    """the stage of a multi-stage kalbert.json (sentence models) that ``--config FOLDER/kalbert.json`` reads"""
    aliases: tuple[str, ...] = ()
    """old names that still run it for one release ("sbert sts"); the CLI says the new name"""
    inputs: Mapping[str, Input] = field(default_factory=dict, hash=False)
    """setting or argument name -> what it must be, checked before any work (:mod:`kalbert.inputs`)"""

    @property
    def command(self) -> str:
        return f"kalbert {self.name}"

    @property
    def makes_artifact(self) -> bool:
        """Whether it makes an artifact folder, and so can be a recipe stage."""
        return self.kind is not None or self.keeps_kind

    def config_class(self) -> type:
        return _attribute(self.config)

    def render(self, config: Any) -> str:
        """The shell command that runs ``config`` (defaults left out)."""
        return render_command(self.command, config, self.positional)

    def check(self, values: Mapping[str, Any], overwrite: bool = False) -> None:
        """Refuse, in one line, the first declared input that ``values`` (setting or argument name -> value) gets
        wrong: the one check the command line and recipe stages run before any work."""
        try:
            check_inputs(self.inputs, values, overwrite)
        except WrongKind as exc:
            exc.name_makers(makers(exc.kinds))
            raise

    def run(self, config: Any, overwrite: bool = False) -> Any:
        """Make the artifact ``config`` describes, its inputs checked first as the command line checks its flags,
        so a recipe stage given a wrong folder fails with the command's own error before anything loads."""
        self.check(config_values(config), overwrite)
        function = _attribute(self.function)
        if "overwrite" in inspect.signature(function).parameters:
            return function(config, overwrite=overwrite)
        return function(config)


def _attribute(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


VERBS: dict[str, Verb] = {verb.name: verb for verb in [
    # vocab
    Verb("vocab build", "train a morphology-aware SentencePiece vocabulary",
         "kalbert vocab build --lang ko --inputs kowiki nsmc --out vocab/ko-32k\n"
         "kalbert vocab build --config vocab/ko-32k.yaml --out outputs/ko-32k-again",
         "kalbert.vocab.config:VocabBuildConfig", "kalbert.vocab:build_vocab", Kind.VOCAB,
         inputs={"inputs": Data(), "out": Output()}),
    Verb("vocab extend", "append pieces to a vocabulary without moving any existing id",
         "kalbert vocab extend --base vocab/ko-32k --from-corpus nsmc --max-new 500 --out outputs/ko-32k-nsmc",
         "kalbert.vocab.config:VocabExtendConfig", "kalbert.vocab:extend_vocab", Kind.VOCAB,
         inputs={"base": TOKENIZER, "words": File(), "from_corpus": Data(), "out": Output()}),
    Verb("vocab normalize", "a new version of a vocabulary or model folder that reads Traditional Chinese (ids kept)",
         "kalbert vocab normalize models/qa-ko-zh-small --out outputs/qa-ko-zh-small-t2s",
         "kalbert.vocab.config:VocabNormalizeConfig", "kalbert.vocab.normalize:normalize_folder", keeps_kind=True,
         positional=("folder",), inputs={"folder": TOKENIZER, "out": Output()}),
    Verb("vocab inspect", "show pieces and ids, or measure a vocabulary on evaluation text",
         'kalbert vocab inspect vocab/ko-32k "배우들의 연기도 좋았다" --eval korsts:dev',
         inputs={"vocab": TOKENIZER, "eval": Data()}),
    # data
    Verb("data list", "list the registered data sets and whether they are present", "kalbert data list"),
    Verb("data build", "build SOP pretraining instances (memory-mapped shards with word/morpheme flags) from corpora",
         "kalbert data build --vocab vocab/ko-32k --inputs kowiki --max-documents 5000 --out outputs/data-kowiki-5k",
         "kalbert.pretrain.data:DataBuildConfig", "kalbert.pretrain.data:build_pretraining_data",
         Kind.PRETRAINING_DATA, inputs={"vocab": Folder((Kind.VOCAB,)), "inputs": Data(), "out": Output()}),
    Verb("data questions",
         "write the questions of QA and BoolQ training splits as a corpus file (for `kalbert sbert mine`)",
         "kalbert data questions --sets korquad kobest-boolq --out outputs/ko-questions.txt",
         inputs={"sets": Data(), "out": Output("file")}),
    # pretrain --out is left to the run, which continues an existing one with --resume
    Verb("pretrain", "pretrain an ALBERT model with MLM + SOP (or MLM + recurring span selection)",
         "kalbert data build --vocab vocab/ko-32k --inputs kowiki --max-documents 5000 --out outputs/data-kowiki-5k\n"
         "kalbert pretrain --preset tiny --data outputs/data-kowiki-5k --out outputs/pretrain-tiny --max-steps 300\n"
         "kalbert pretrain --preset tiny --data outputs/data-kowiki-5k --out outputs/pretrain-tiny --max-steps 300 "
         "--resume\n"
         "kalbert pretrain --data outputs/data-kowiki-5k --init-from outputs/pretrain-tiny/model --objective mlm \\\n"
         "    --out outputs/further --max-steps 100\n"
         "kalbert pretrain --data outputs/data-kowiki-5k --init-from outputs/pretrain-tiny/model --objective "
         "mlm+rss \\\n"
         "    --out outputs/further-rss --max-steps 100\n"
         "torchrun --nproc-per-node 2 -m kalbert pretrain --preset tiny --data outputs/data-kowiki-5k --out "
         "outputs/ddp\n"
         "kalbert pretrain --list-presets --vocab-size 30000",
         "kalbert.pretrain.config:PretrainConfig", "kalbert.pretrain.trainer:pretrain", Kind.PRETRAINED_MODEL,
         record="model", inputs={"data": Folder((Kind.PRETRAINING_DATA,)),
                                 "init_from": Folder((Kind.PRETRAINED_MODEL,)), "vocab": Folder((Kind.VOCAB,)),
                                 "distill_teacher": Teacher()}),
    Verb("transplant", "turn a BERT-family sentence encoder (e.g. multilingual-e5-small) into an ALBERT on a kalbert "
         "vocabulary, without training",
         "kalbert transplant --teacher multilingual-e5-small --vocab vocab/ko-zh-48k --layers 5 --embedding-size 80 "
         "--out outputs/albert-ko-zh-transplant",
         "kalbert.pretrain.config:TransplantConfig", "kalbert.transplant:transplant", Kind.PRETRAINED_MODEL,
         inputs={"teacher": TRANSPLANT_TEACHER, "vocab": Folder((Kind.VOCAB,)), "out": Output()}),
    # a recipe run's --out is its stages' folder, resumed; the recipe is a file or a shipped name (kalbert.recipe)
    Verb("demo", "run the kalbert pipeline at small scale on ../shared/data (recipes/demo.yaml); rerun to resume",
         "kalbert demo --out outputs/demo --set vocab_size=4000"),
    Verb("recipe run", "run a recipe (a YAML list of kalbert stages) under one output folder; rerun to resume",
         "kalbert recipe run recipes/demo.yaml\n"
         "kalbert recipe run recipes/sbert-ko-zh-small.yaml --dry-run\n"
         "kalbert recipe run recipes/demo.yaml --set vocab_size=4000 --out outputs/demo-4k --until sentence"),
    # bench run --model is a baseline's name or a folder (kalbert.bench.baselines.load_encoder); a rerun of either
    # verb rewrites its --out
    Verb("bench run", "evaluate a sentence model (or a baseline) on STS, pair, multiple-choice and retrieval tasks",
         "kalbert bench run --model tfidf --tasks all --out benchmarks/results/tfidf.json\n"
         "kalbert bench run --model bm25 --tasks retrieval --out benchmarks/results/bm25.json\n"
         "kalbert bench run --model outputs/sbert-ko-tiny-onnx --backend onnx-int8 --tasks sts "
         "--out benchmarks/results/sbert-ko-tiny-int8.json",
         "kalbert.bench.runner:BenchRunConfig"),
    Verb("bench report",
         "write RESULTS.md and a PNG chart per task group from results files, and model cards' benchmarks",
         "kalbert bench report benchmarks/results/*.json --out benchmarks/RESULTS.md --cards models/*",
         inputs={"results": File()}),
    # mc
    Verb("mc train", "fine-tune an ALBERT or BERT multiple-choice head (train split; dev selects the epoch; "
         "accuracy on the labelled test split, else dev)",
         "kalbert mc train --model outputs/albert-tiny --task kobest-copa --out outputs/mc-copa "
         "--results benchmarks/results/mc_kobest-copa_albert-tiny.json",
         "kalbert.tasks.configs:MCTrainConfig", "kalbert.tasks.multiple_choice:train_mc", Kind.MC_MODEL,
         inputs={"model": ENCODER_START, "extra_train": File(), "out": Output()}),
    Verb("mc cloze", "blank 4-character idioms in Chinese corpus text: CHID-format training examples (documents "
         "holding an evaluation passage are dropped first)",
         "kalbert mc cloze --corpus zh-clue --max-examples 6000 --out outputs/chid-cloze.jsonl\n"
         "kalbert mc train --model outputs/albert-tiny --task chid --extra-train outputs/chid-cloze.jsonl "
         "--out outputs/mc-chid",
         "kalbert.tasks.idiom_cloze:ClozeConfig", inputs={"corpus": Data(), "out": Output("file")}),
    Verb("mc average", "average the weights of runs fine-tuned from one starting model (a model soup); measured on "
         "dev and test",
         "kalbert mc average --models outputs/mc-copa-lr2e-5 outputs/mc-copa-lr3e-5 --out outputs/mc-copa-soup "
         "--results benchmarks/results/mc_kobest-copa_soup.json",
         "kalbert.tasks.configs:MCAverageConfig", "kalbert.tasks.mc_average:average_mc", Kind.MC_MODEL,
         inputs={"models": Folder((Kind.MC_MODEL,)), "out": Output()}),
    Verb("mc predict", "score the choices for a context (and a COPA question)",
         'kalbert mc predict --model outputs/mc-copa --context "전쟁이 시작되었다." --question 결과 '
         '--choices "병사들이 집으로 돌아왔다." "병사들이 전투에 파견되었다."',
         inputs={"model": Folder((Kind.MC_MODEL,)), "choices": Choices()}),
    # qa
    Verb("qa train", "fine-tune an ALBERT or BERT question-answering head on the task's train part (val picks the "
         "epoch; EM/F1 on test)",
         "kalbert qa train --model outputs/pretrain-tiny/model --task korquad --out outputs/qa-korquad",
         "kalbert.tasks.configs:QATrainConfig", "kalbert.tasks.qa.train:train_qa", Kind.QA_MODEL,
         inputs={"model": ENCODER_START, "train": Data(), "out": Output()}),
    Verb("qa predict", "answer a question from a context (or a JSONL file of them) with a fine-tuned QA model",
         'kalbert qa predict --model outputs/qa-korquad --context "대한민국의 수도는 서울특별시이다." '
         '--question "대한민국의 수도는?"',
         inputs={"model": Folder((Kind.QA_MODEL,)), "jsonl": File(), "out": Output("file", needs="jsonl")}),
    Verb("qa export", "copy a fine-tuned QA model with float16 weights (half the size; computed in float32), checked "
         "on probe questions",
         "kalbert qa export --model outputs/qa-korquad --out outputs/qa-korquad-f16",
         inputs={"model": Folder((Kind.QA_MODEL,)), "out": Output()}),
    Verb("qa evaluate", "EM/F1 of a QA model on a split, as the official KorQuAD 1.0 / CMRC 2018 scripts compute them "
         "(DRCD: CMRC's)",
         "kalbert qa evaluate --model outputs/qa-korquad --task korquad --split test --out "
         "outputs/qa-korquad-test.json",
         inputs={"model": Folder((Kind.QA_MODEL,)), "out": Output("file")}),
    # rerank
    Verb("rerank train", "fine-tune a cross-encoder reranker from an ALBERT (QA, sentence or pretrained model) on the "
         "QA sets' train articles and the question -> answer train carves with mined hard negatives; picked on "
         "val/dev reranking",
         "kalbert rerank train --model models/qa-ko-zh-small --out outputs/rerank --max-rows 2000",
         "kalbert.rerank.config:RerankTrainConfig", "kalbert.rerank.train:train_reranker", Kind.RERANKER,
         inputs={"model": RERANKER_START, "train": Data(), "eval": Data(selects=True), "negative_miner": Teacher(),
                 "teacher": Folder((Kind.RERANKER,)), "out": Output()}),
    Verb("rerank score", 'score each {"query": ..., "passages": [...]} line of a JSONL file; writes it back with '
         '"scores" and "ranking" (passage indices, best first)',
         "kalbert rerank score --model outputs/rerank --input pairs.jsonl --out scored.jsonl",
         inputs={"model": Folder((Kind.RERANKER,)), "input": File(), "out": Output("file")}),
    Verb("rerank export", "copy a reranker with float16 weights (half the size, computed in float32), optionally with "
         "ONNX files, checked on probe pairs",
         "kalbert rerank export --model outputs/rerank --out models/rerank-ko-zh-small --onnx --int8",
         inputs={"model": Folder((Kind.RERANKER,)), "out": Output()}),
    # sbert
    Verb("sbert export", "wrap an ALBERT checkpoint as a SentenceTransformer folder, or add ONNX files to one",
         "kalbert sbert export --model outputs/pretrain-ko-tiny --out outputs/sbert-ko-tiny --eval korsts:dev\n"
         "kalbert sbert export --backend onnx --quantize int8 --model outputs/sbert-ko-tiny "
         "--out outputs/sbert-ko-tiny-onnx\n"
         "kalbert sbert export --weights float16 --max-seq-length 512 --model outputs/sbert-ko-tiny "
         "--out outputs/sbert-ko-tiny-half",
         "kalbert.sentence.export:ExportConfig", "kalbert.sentence.export:export_sentence_model", Kind.SENTENCE_MODEL,
         config_stage="export", inputs={"model": Folder((Kind.PRETRAINED_MODEL, Kind.SENTENCE_MODEL)),
                                        "tokenizer": TOKENIZER, "eval": Data(selects=True), "out": Output()}),
    Verb("sbert train", "train a sentence model on graded pairs, NLI/paraphrase pairs and question -> passage rows; "
         "keep the best dev checkpoint",
         "kalbert sbert train --model outputs/sbert-ko-tiny --train korsts --eval korsts:dev --test korsts:test "
         "--out outputs/sbert-ko-tiny-sts\n"
         "kalbert sbert train --model models/sbert-ko-zh-small --train korquad cmrc2018 drcd answers-ko answers-zh "
         "korsts --eval korsts:dev korquad:val answers-ko:dev --negative-miner multilingual-e5-small "
         "--score-teacher multilingual-e5-small --max-seq-length 256 --out outputs/sbert-retrieval",
         "kalbert.sentence.config:SentenceTrainConfig", "kalbert.sentence.train:train_sentence_model",
         Kind.SENTENCE_MODEL, config_stage="sts", aliases=("sbert sts",),
         inputs={"model": SENTENCE_START, "train": Data(), "eval": Data(selects=True), "test": Data(),
                 "negative_miner": Teacher(), "score_teacher": Teacher(), "out": Output()}),
    Verb("sbert distill", "distil a teacher sentence model into a student on corpus and/or parallel sentences",
         "kalbert sbert distill --teacher multilingual-e5-small --student outputs/albert-ko-zh-transplant "
         "--corpus kowiki nsmc zh-laws zh-clue --max-sentences 150000 --loss mse --eval korsts:dev "
         "--out outputs/sbert-ko-zh-kd",
         "kalbert.sentence.config:DistillConfig", "kalbert.sentence.distill:distill_student", Kind.SENTENCE_MODEL,
         config_stage="distill", inputs={"student": SENTENCE_START, "teacher": Teacher(), "parallel": Data(),
                                         "corpus": Data(), "eval": Data(selects=True), "out": Output()}),
    Verb("sbert mine", "mine same-language sentence pairs from corpora by nearest neighbours and grade them with a "
         "teacher, as a graded training file for `kalbert sbert train --train FILE`",
         "kalbert sbert mine --teacher outputs/teachers/me5-small-ft --corpus kowiki nsmc zh-laws zh-clue "
         "--max-sentences 200000 --pairs 50000 --neighbours 8 --out outputs/mined/ko-zh-ft.tsv",
         "kalbert.sentence.mine:MineConfig", inputs={"teacher": Teacher(), "corpus": Data(), "out": Output("file")}),
    Verb("sbert average",
         "average the weights of sentence models fine-tuned from one starting point (a model soup)",
         "kalbert sbert average --models outputs/soup-a outputs/soup-b --eval korsts:dev stsb-zh:dev "
         "--out outputs/soup",
         "kalbert.sentence.average:AverageConfig", "kalbert.sentence.average:average_models", Kind.SENTENCE_MODEL,
         config_stage="average",
         inputs={"models": Folder((Kind.SENTENCE_MODEL,)), "eval": Data(selects=True), "out": Output()}),
    Verb("sbert widen", "widen a transplanted sentence ALBERT's embeddings with the teacher's directions its "
         "transplant dropped (more parameters, same speed); train it after",
         "kalbert sbert widen --model models/sbert-ko-zh-small --embedding-size 200 --alpha 0.5 "
         "--eval korsts:dev --out outputs/sbert-ko-zh-small-e200",
         "kalbert.sentence.widen:WidenConfig", "kalbert.sentence.widen:widen_model", Kind.SENTENCE_MODEL,
         config_stage="widen", inputs={"model": Folder((Kind.SENTENCE_MODEL,)), "teacher": TRANSPLANT_TEACHER,
                                       "eval": Data(selects=True), "out": Output()}),
    # static
    Verb("static distill", "embed every piece of a kalbert vocabulary with a teacher, reduce by PCA and weight by "
         "frequency (model2vec-style)",
         "kalbert static distill --teacher multilingual-e5-small --vocab vocab/ko-zh-48k --out outputs/static-ko-zh",
         "kalbert.static.distill:StaticDistillConfig", "kalbert.static.distill:distill_static", Kind.STATIC_MODEL,
         config_stage="distill", inputs={"vocab": Folder((Kind.VOCAB,)), "teacher": Teacher(),
                                         "eval": Data(selects=True), "out": Output()}),
    Verb("static train", "fit a static model to the teacher's sentence vectors on corpus sentences, then optionally "
         "to STS pairs (tokenlearn-style)",
         "kalbert static train --teacher multilingual-e5-small --init outputs/static-ko-zh --corpus kowiki nsmc "
         "zh-laws zh-clue --max-sentences 150000 --matryoshka-dims 128 64 --out outputs/static-ko-zh-trained",
         "kalbert.static.config:StaticTrainConfig", "kalbert.static.train:train_static", Kind.STATIC_MODEL,
         config_stage="train",
         inputs={"init": Folder((Kind.STATIC_MODEL,)), "teacher": Teacher(), "corpus": Data(), "sts": Data(),
                 "negative_miner": Teacher(), "score_teacher": Teacher(), "eval": Data(selects=True), "out": Output()}),
    # search build --out is checked by the build, which lets a --shard run write beside an existing index
    Verb("search build", "split documents into passages, encode them and index them (resumes after a kill)",
         "kalbert search build --corpus docs/ notes.jsonl --out outputs/docs-index --lexical bm25\n"
         "kalbert search build --corpus kowiki --out outputs/kowiki-index --engine hnsw "
         "--model models/static-ko-zh-48k\n"
         "kalbert search build --corpus korsts:test --out outputs/index-milvus --engine milvus "
         "--uri outputs/milvus.db\n"
         "kalbert search build --corpus korsts:test --out outputs/index-int8 --model outputs/sbert-onnx "
         "--backend onnx-int8",
         "kalbert.search.build:SearchBuildConfig", "kalbert.search.build:build_index", Kind.SEARCH_INDEX,
         inputs={"corpus": Sources(), "model": SENTENCE_MODELS}),
    Verb("search query", "find the best passages of each query text",
         'kalbert search query --index outputs/docs-index "한 남자가 기타를 치고 있다." -k 5 --mode hybrid\n'
         'kalbert search query --index outputs/docs-index "계약 해지" --filter lang=ko --one-per-document\n'
         "kalbert search query --index outputs/docs-index --queries questions.jsonl --jsonl > hits.jsonl",
         inputs={"index": SEARCH_INDEX, "rerank_model": RERANKER, "model": SENTENCE_MODELS}),
    Verb("search add", "add documents to an index, or replace those with the same id (durable at once)",
         "kalbert search add --index outputs/docs-index new-docs.jsonl more-docs/",
         inputs={"index": SEARCH_INDEX, "sources": Sources()}),
    Verb("search delete", "delete documents from an index by id (durable at once)",
         "kalbert search delete --index outputs/docs-index doc-17 doc-18", inputs={"index": SEARCH_INDEX}),
    Verb("search compact", "fold added and deleted documents into the engine (rebuilds it and BM25)",
         "kalbert search compact --index outputs/docs-index", inputs={"index": SEARCH_INDEX}),
    Verb("serve", "serve search indexes and sentence models over HTTP (OpenAI-compatible /v1/embeddings, /search, "
         "/documents)",
         "kalbert serve --index outputs/docs-index\n"
         "kalbert serve --index outputs/docs-index outputs/kowiki-index --model models/static-ko-zh-48k --port 8080\n"
         "kalbert serve --config serve.yaml --host 0.0.0.0 --api-key $KEY",
         "kalbert.serve.settings:ServeSettings",
         inputs={"index": SEARCH_INDEX, "model": SENTENCE_MODELS, "rerank_model": RERANKER}),
    # teacher
    Verb("teacher export", "write a pip-installed teacher as a standard SentenceTransformer folder, checked against "
         "the package's own engine",
         "kalbert teacher export multilingual-e5-small --out teachers/me5-small",
         "kalbert.teachers.export:TeacherExportConfig", "kalbert.teachers.export:export_teacher", Kind.TEACHER,
         positional=("teacher",), inputs={"teacher": Teacher(), "out": Output()}),
    Verb("teacher finetune", "fine-tune a teacher on the Korean/Chinese STS and pair train splits (token embeddings "
         "frozen), keeping the best dev checkpoint",
         "kalbert teacher finetune --out outputs/teachers/me5-small-ft",
         "kalbert.sentence.config:TeacherFinetuneConfig", "kalbert.sentence.teacher_finetune:finetune_teacher",
         Kind.SENTENCE_MODEL,
         inputs={"teacher": Teacher(), "train": Data(), "eval": Data(selects=True), "test": Data(), "out": Output()}),
    Verb("teacher encode", "encode corpus sentences with a teacher into the resumable embedding cache (kill and rerun "
         "at will: at most one shard is lost)",
         "kalbert teacher encode --teacher multilingual-e5-small --corpus kowiki nsmc zh-laws zh-clue "
         "--max-sentences 150000 --teacher-backend auto",
         "kalbert.teachers.cache:TeacherEncodeConfig", inputs={"teacher": Teacher(), "corpus": Data()}),
    Verb("env", "show the CPU, instruction sets, bf16/int8 support and versions (paste it into bug reports)",
         "kalbert env\n"
         "kalbert env --json > hardware.json   # the hardware block results files and model cards record"),
]}

_ALIASES = {alias: verb for verb in VERBS.values() for alias in verb.aliases}


def get_verb(name: str) -> Verb:
    """The artifact-making verb called ``name`` ("sbert train"), as a recipe stage names it; an old name gives its
    verb under that name, so what it renders is what was asked for. Any other name is a one-line error."""
    verb = replace(_ALIASES[name], name=name) if name in _ALIASES else VERBS.get(name)
    stages = [other.name for other in VERBS.values() if other.makes_artifact]
    if verb is None:
        close = difflib.get_close_matches(name, stages, n=1)
        guess = f"did you mean '{close[0]}'? " if close else ""
        raise KalbertError(f"unknown verb '{name}'", f"{guess}known: {', '.join(stages)}")
    if not verb.makes_artifact:
        raise KalbertError(f"`{verb.command}` makes no artifact folder, so it cannot be a recipe stage",
                           f"stage verbs: {', '.join(stages)}")
    return verb


def makers(kinds: Iterable[str]) -> str:
    """The commands that make a folder of one of ``kinds``, one per noun, for "make one with ..." hints:
    "`kalbert sbert export|train|distill|average|widen` or `kalbert teacher finetune`"."""
    groups: dict[str, list[str]] = {}
    for verb in VERBS.values():
        if verb.kind in kinds:
            noun, _, word = verb.name.partition(" ")
            groups.setdefault(noun, []).append(word)
    commands = (f"kalbert {noun} {'|'.join(words)}".rstrip() for noun, words in groups.items())
    return " or ".join(f"`{command}`" for command in commands)


def verb_for(config: Any) -> Verb:
    """The verb whose config ``config`` is, found by its class's "module:Class" without importing any other."""
    ref = f"{type(config).__module__}:{type(config).__qualname__}"
    found = next((verb for verb in VERBS.values() if verb.config == ref), None)
    if found is None:
        raise KalbertError(f"internal error: no verb takes a {ref}")
    return found


def command_for(config: Any) -> str:
    """The shell command that reproduces ``config``, as the records of the artifacts it makes say it."""
    return verb_for(config).render(config)
