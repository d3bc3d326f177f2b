"""Distillation: student(source) and student(translation) learn from cached teacher(source), by their
cosine similarities (default), by MSE through a projection or by InfoNCE; corpus sentences learn from
their own teacher vectors, corpus paragraphs from the teacher's passage vectors; teachers that cannot read the
data are refused."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from kalbert.errors import KalbertError
from kalbert.sentence import load_sentence_model
from kalbert.sentence.config import DistillConfig
from kalbert.sentence.distill import ContrastiveDistillLoss, SimilarityDistillLoss, distill_student
from kalbert.training import LoopConfig

QUICK = LoopConfig(lr=1e-3, batch_size=32, max_steps=4, eval_steps=2)


def test_mse_distillation_projects_and_caches(tiny_sbert, tiny_teacher, tiny_data, tmp_path):
    config = DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=["tatoeba-en-ko"],
                           out=str(tmp_path / "kd"), loss="mse", dev_rows=50, cache_dir=str(tmp_path / "cache"),
                           loop=QUICK)
    result = distill_student(config)
    student = load_sentence_model(result.out)
    assert student.get_embedding_dimension() == 24  # 32-wide ALBERT + Dense to the teacher's 24
    assert {"en-ko_negative_mse", "en-ko_similarity_spearman", "en-ko_mean_accuracy"} <= set(result.metrics)
    meta = json.loads((result.out / "kalbert.json").read_text())
    assert meta["teacher"]["source_lang"] == "en" and meta["languages"] == ["ko"]
    assert len(list((tmp_path / "cache").glob("*/shard-*.npz"))) == 1  # 250 training + 50 held-out sources


def test_similarity_distillation_keeps_the_student_width(tiny_sbert, tiny_teacher, tiny_data, tmp_path):
    config = DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=["tatoeba-en-ko"],
                           out=str(tmp_path / "kd"), dev_rows=50, learn_source=False,
                           cache_dir=str(tmp_path / "cache"), loop=QUICK)
    result = distill_student(config)
    assert load_sentence_model(result.out).get_embedding_dimension() == 32  # no projection needed
    assert "en-ko_negative_mse" not in result.metrics
    assert -1.0 <= result.metrics["en-ko_similarity_spearman"] <= 1.0
    stage = json.loads((result.out / "kalbert.json").read_text())["stages"][-1]
    assert stage["parallel_train_rows"] == 250 and stage["steps"] == 4  # 250 Korean sentences only, 32 a batch


class FixedEncoder(torch.nn.Module):
    """Stands in for a SentenceTransformer: the 'features' are the embeddings themselves."""

    def forward(self, features):
        return {"sentence_embedding": features["x"]}


def test_similarity_loss_compares_cosine_matrices_only():
    loss = SimilarityDistillLoss(FixedEncoder())
    teacher = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    narrower = 5 * teacher[:, [1, 0]]  # same cosines: other axes, other length, 2 wide instead of 3
    assert loss([{"x": narrower}], teacher).item() == pytest.approx(0.0, abs=1e-7)
    student = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])  # every pair at cosine 1
    # teacher cosines off the diagonal: 0, s, s (twice each) with s = 1/sqrt(2)
    expected = (1.0 + 2 * (1 - 2 ** -0.5) ** 2) * 2 / 9
    assert loss([{"x": student}], teacher).item() == pytest.approx(expected, rel=1e-5)


def test_contrastive_loss_picks_the_own_teacher_vector_and_ignores_shared_targets():
    loss = ContrastiveDistillLoss(FixedEncoder(), temperature=0.05)
    teacher = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])  # rows 1 and 2: a source and its translation
    matched = loss([{"x": teacher.clone()}], teacher).item()
    swapped = loss([{"x": teacher[[1, 0, 2]]}], teacher).item()
    assert matched < 1e-6 < swapped  # the shared target of rows 1 and 2 is no negative for either


def test_corpus_distillation_learns_teacher_vectors_of_monolingual_sentences(tiny_sbert, tiny_teacher, ko_corpus,
                                                                              tmp_path):
    multilingual = tmp_path / "teacher"
    import shutil

    shutil.copytree(tiny_teacher, multilingual)
    (multilingual / "kalbert.json").write_text(json.dumps({"languages": ["multilingual"]}), encoding="utf-8")
    config = DistillConfig(student=str(tiny_sbert), teacher=str(multilingual), corpus=[str(ko_corpus)],
                           max_sentences=300, out=str(tmp_path / "kd"), loss="infonce", dev_rows=40,
                           cache_dir=str(tmp_path / "cache"), loop=QUICK)
    result = distill_student(config)
    assert load_sentence_model(result.out).get_embedding_dimension() == 24  # projected onto the teacher
    assert {"corpus-ko_similarity_spearman", "corpus-ko_negative_mse"} <= set(result.metrics)
    stage = json.loads((result.out / "kalbert.json").read_text())["stages"][-1]
    assert stage["corpus_ko_dev_rows"] == 40 and stage["corpus_ko_train_rows"] > 100
    # no passages: no passage task, counts or teacher in the record
    assert stage["config"]["max_passages"] == 0 and not {k for k in stage if "passage" in k}
    with pytest.raises(KalbertError, match="teacher reads en, the corpora are ko"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), corpus=[str(ko_corpus)],
                                      max_sentences=300, out=str(tmp_path / "en"), cache_dir=str(tmp_path / "c2")))


def _prompted_teacher(folder, out):
    """A multilingual copy of ``folder`` with a query prompt by default and another one for documents (as e5's
    "query: " and "passage: ", in words the Korean test vocabulary has)."""
    shutil.copytree(folder, out)
    (out / "kalbert.json").write_text(json.dumps({"languages": ["multilingual"]}), encoding="utf-8")
    settings = out / "config_sentence_transformers.json"
    stored = json.loads(settings.read_text(encoding="utf-8"))
    stored.update(prompts={"query": "질문: ", "document": "문단: "}, default_prompt_name="query")
    settings.write_text(json.dumps(stored), encoding="utf-8")
    return out


def test_passage_distillation_is_a_second_task_on_the_teachers_passage_vectors(tiny_sbert, tiny_teacher, ko_corpus,
                                                                               tmp_path, monkeypatch):
    from kalbert.sentence import distill
    from kalbert.teachers.backends import load_teacher, with_prompt
    from kalbert.teachers.cache import open_cache

    teacher = _prompted_teacher(tiny_teacher, tmp_path / "teacher")
    trained, real_fit = [], distill.fit

    def fit(model, tasks, *args, **kwargs):
        trained.extend(tasks)
        return real_fit(model, tasks, *args, **kwargs)

    monkeypatch.setattr(distill, "fit", fit)
    config = DistillConfig(student=str(tiny_sbert), teacher=str(teacher), corpus=[str(ko_corpus)], max_sentences=200,
                           max_passages=100, out=str(tmp_path / "kd"), dev_rows=30, max_seq_length=64,
                           cache_dir=str(tmp_path / "cache"), loop=QUICK)
    result = distill_student(config)
    sentences, passages = trained
    assert (sentences.name, passages.name, passages.prompt_names) == ("distill", "distill-passages", ("document",))
    assert all(64 <= len(p) <= 1500 for p in passages.columns[0]) and len(passages) == 70
    assert {"corpus-ko_similarity_spearman", "passages-ko_similarity_spearman"} <= set(result.metrics)
    meta = json.loads((result.out / "kalbert.json").read_text())
    stage = meta["stages"][-1]
    assert (stage["corpus_ko_passage_train_rows"], stage["corpus_ko_passage_dev_rows"]) == (70, 30)
    assert stage["config"]["max_passages"] == 100 and stage["passage_teacher_encoding"]
    # the passages' vectors are the teacher's document-prompt ones, in a cache folder of their own
    fingerprint, passage_fingerprint = meta["teacher"]["fingerprint"], stage["passage_teacher"]["fingerprint"]
    assert passage_fingerprint != fingerprint
    assert {p.name for p in (tmp_path / "cache").iterdir()} >= {fingerprint, passage_fingerprint}
    reader = with_prompt(load_teacher(str(teacher)), "passage")
    cached = open_cache(reader, str(tmp_path / "cache")).vectors(passages.columns[0][:4])
    assert abs(cached - passages.labels[:4]).max() < 1e-6
    assert abs(cached - reader.teacher.encode(passages.columns[0][:4])).max() > 1e-3  # not the query-prompt ones
    with pytest.raises(KalbertError, match="--max-passages samples corpus paragraphs"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(teacher), max_passages=10,
                                      parallel=[_tsv(tmp_path / "en-ko.tsv", ["en", "ko"], ROWS)],
                                      out=str(tmp_path / "x")))


def test_real_minilm_teacher(tiny_sbert, tiny_data, tmp_path):
    config = DistillConfig(student=str(tiny_sbert), parallel=["tatoeba-en-ko"], out=str(tmp_path / "kd"),
                           dev_rows=50, max_rows=150, cache_dir=str(tmp_path / "cache"), loop=QUICK)
    result = distill_student(config)
    assert load_sentence_model(result.out).get_embedding_dimension() == 32
    assert "en-ko_similarity_spearman" in result.metrics


def _tsv(path, header, rows):
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


ROWS = [("Hello there.", "안녕하세요."), ("I like tea.", "나는 차를 좋아한다."), ("It is raining.", "비가 온다.")]


def test_teacher_language_must_match_the_parallel_columns(tiny_sbert, tiny_teacher, tmp_path):
    no_english = _tsv(tmp_path / "ko-zh.tsv", ["ko", "zh"], [("안녕하세요.", "你好。")] * 3)
    with pytest.raises(KalbertError, match="no 'en' column for the en teacher"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=[no_english],
                              out=str(tmp_path / "a")))
    with pytest.raises(KalbertError, match="teacher is a en model but the source column is 'ko'"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), source_lang="ko",
                              parallel=[_tsv(tmp_path / "ok.tsv", ["en", "ko"], ROWS)], out=str(tmp_path / "b")))
    swapped = _tsv(tmp_path / "swapped.tsv", ["en", "ko"], [(ko, en) for en, ko in ROWS])
    with pytest.raises(KalbertError, match="column 'en' of .* looks like 'ko'"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=[swapped],
                              out=str(tmp_path / "c")))


def test_bad_parallel_sources(tiny_sbert, tiny_teacher, tiny_data, tmp_path):
    for source, message in [("parallel-xnli-test", "evaluation split"), ("korsts", "not parallel"),
                            (str(tmp_path / "missing.tsv"), "not found"),
                            (_tsv(tmp_path / "empty.tsv", [], []), "empty|no rows")]:
        with pytest.raises(KalbertError, match=message):
            distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=[source],
                                  out=str(tmp_path / "x")))
    with pytest.raises(KalbertError, match="no training sentences"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), out=str(tmp_path / "x")))
    with pytest.raises(KalbertError, match="not a corpus"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), corpus=["korsts"],
                                      out=str(tmp_path / "x")))
    with pytest.raises(KalbertError, match="not a SentenceTransformer folder"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tmp_path), parallel=["tatoeba-en-ko"],
                              out=str(tmp_path / "x")))


def test_distillation_picks_on_retrieval_val_as_sts_training_does(tiny_sbert, tiny_teacher, tiny_qa_data, tmp_path):
    config = DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=["tatoeba-en-ko"],
                           out=str(tmp_path / "kd"), eval=["korsts:dev", "korquad:val"], dev_rows=50,
                           learn_source=False, cache_dir=str(tmp_path / "cache"),
                           loop=QUICK)
    result = distill_student(config)
    metrics = json.loads((result.out / "kalbert.json").read_text())["metrics"]
    assert {(m["data"], m["metric"]) for m in metrics if m["stage"] == "distill"} >= {
        ("korsts:dev", "spearman_cosine"), ("korquad:val", "ndcg_at_10")}
    with pytest.raises(KalbertError, match="korquad:test"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=["tatoeba-en-ko"],
                                      out=str(tmp_path / "kd2"), eval=["korquad:test"]))
