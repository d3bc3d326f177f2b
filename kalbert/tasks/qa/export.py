"""`kalbert qa export`: a fine-tuned QA folder with its weights stored as float16, for shipping (``kalbert.weights``).

The copy must answer probe questions exactly as the original does, Korean and Chinese alike."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from kalbert.artifact import Kind, read_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text
from kalbert.stage import artifact_folder, write_record
from kalbert.tasks.qa.model import QAModel
from kalbert.tasks.qa.train import render_card
from kalbert.weights import store_float16

PROBES = [
    ("세종대왕은 1446년에 훈민정음을 반포하였다. 훈민정음은 백성을 가르치는 바른 소리라는 뜻이다.",
     "훈민정음을 반포한 해는?"),
    ("대한민국의 수도는 서울특별시이며, 가장 큰 항구 도시는 부산광역시이다.", "대한민국에서 가장 큰 항구 도시는?"),
    ("长江是亚洲第一长河，全长约6300公里，流经中国多个省份，最后注入东海。", "长江最后注入哪里？"),
    ("鲁迅原名周树人，浙江绍兴人，是中国现代文学的奠基人之一，代表作有《狂人日记》。", "鲁迅的原名是什么？"),
]


def export_qa_float16(model: str | Path, out: str | Path, overwrite: bool = False) -> dict:
    """Write ``out``: ``model`` with float16 weights; returns its record (``weights_storage`` added)."""
    import torch

    source = Path(model).expanduser()
    original = QAModel(source, precision="fp32")  # refuses a folder that is not a QA model
    contexts, questions = [c for c, _ in PROBES], [q for _, q in PROBES]
    reference = original.answer(questions, contexts)
    with artifact_folder(out, Kind.QA_MODEL, overwrite=overwrite) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        store_float16(tmp)
        copy = QAModel(tmp, precision="fp32")
        if (dtype := next(copy.model.parameters()).dtype) != torch.float32:
            raise RuntimeError(f"{tmp} loads as {dtype}, expected float32")
        ours = copy.answer(questions, contexts)
        changed = [q for q, a, b in zip(questions, reference, ours, strict=True)
                   if (a.start, a.end) != (b.start, b.end)]
        if changed:
            raise KalbertError(f"float16 weights change the answer to {changed[0]!r}", "keep the float32 folder")
        meta = read_meta(tmp)
        meta["weights_storage"] = {
            "dtype": "float16", "computed_in": "float32", "probe_answers_unchanged": len(PROBES),
            "max_probe_score_change": max(abs(a.score - b.score) for a, b in zip(reference, ours, strict=True)),
            "command": shlex.join(["kalbert", "qa", "export", "--model", str(source), "--out", str(out)]),
        }
        meta = write_record(tmp, meta, Kind.QA_MODEL, [source])
        atomic_write_text(tmp / "README.md", render_card(meta))
    return meta
