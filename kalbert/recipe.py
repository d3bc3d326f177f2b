"""`kalbert recipe run`: a model's whole build as one YAML file of kalbert stages, rerun to resume.

A recipe names an output folder, a few ``settings`` and a list of ``stages``, each one artifact-making verb
(:mod:`kalbert.verbs`) with its config. Stage ``NAME`` writes ``OUT/NAME``; ``${NAME}`` in a later stage's
config is that folder and ``${setting}`` a setting's value, so ``--set setting=value`` (or
``--set NAME.key=value`` for one stage's config) changes a run without another recipe. ``then`` lists read-only
kalbert commands run at the end (the demo's search query).

A stage is done when its folder's record has the verb's kind (any kind, for a verb that keeps its input's)
and carries this stage's ``recipe`` block with the same config and the same records of the stages it reads;
every record written while a stage runs carries that block (:func:`kalbert.stage.recipe_stage`), so a killed
run leaves a folder that is complete or absent, and rerunning resumes at the first stage not done (inside it
too, where the verb resumes: distillation, QA and pretraining checkpoints, the teacher's embedding cache). A
stage whose folder was made otherwise is refused in one line unless ``--overwrite``, which rebuilds it and,
through their recorded inputs, the stages after it. A stage runs through its verb (:meth:`kalbert.verbs.Verb.run`),
which checks its inputs as the command line checks the verb's flags, so a stage given a missing or wrong folder
fails with the command's own one-line error before anything loads.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kalbert.artifact import META_FILE, read_meta
from kalbert.config import build_config, config_values, flatten_values
from kalbert.config import settings as config_settings
from kalbert.data.registry import DATASETS
from kalbert.errors import KalbertError
from kalbert.hardware import describe_machine
from kalbert.stage import recipe_stage
from kalbert.verbs import Verb, get_verb

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"
"""The shipped recipes (a checkout's ``recipes/``); ``kalbert recipe run demo`` finds ``demo.yaml`` there."""

_REF = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
_KEYS = {"out", "settings", "stages", "then"}
_STAGE_KEYS = {"stage", "verb", "config"}


@dataclass
class Stage:
    """One resolved stage: its verb and config, and the earlier stages it reads."""

    name: str
    verb: Verb
    config: Any
    folder: Path
    reads: list[str]
    """earlier stages named in its config (``${NAME}``)"""
    data: list[str]
    """registered data sets (name[:split]) its config names"""
    files: list[str]
    """path-like values that are neither registered data nor an earlier stage's folder"""

    @property
    def record_folder(self) -> Path:
        return self.folder / self.verb.record if self.verb.record else self.folder

    @property
    def values(self) -> dict[str, Any]:
        """Its settings as JSON values, as the record keeps them."""
        return json.loads(json.dumps(config_values(self.config), default=str))

    @property
    def command(self) -> str:
        return self.verb.render(self.config)


@dataclass
class Recipe:
    path: Path
    sha256: str
    out: Path
    settings: dict[str, Any]
    stages: list[Stage]
    then: list[str] = field(default_factory=list)

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KalbertError(f"{self.path} has no stage '{name}'", f"stages: {', '.join(s.name for s in self.stages)}")


def recipe_path(ref: str | Path) -> Path:
    """A recipe file, or the name of a shipped one (``demo`` -> ``recipes/demo.yaml``)."""
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    shipped = RECIPES_DIR / f"{ref}.yaml"
    if shipped.is_file():
        return shipped
    names = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))
    raise KalbertError(f"recipe {ref} not found", f"give a YAML file or a shipped recipe: {', '.join(names)}")


def _yaml_value(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _set_value(text: str) -> Any:
    """A ``--set`` value read as YAML, except that 5e-5 is a number (YAML 1.1 wants 5.0e-5)."""
    value = _yaml_value(text)
    if isinstance(value, str) and _FLOAT.fullmatch(value):
        return float(value)
    return value


def _overrides(pairs: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``--set`` KEY=VALUE pairs as (setting values, per-stage config values); values are read as YAML."""
    settings: dict[str, Any] = {}
    stages: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise KalbertError(f"--set {pair}: expected KEY=VALUE", "e.g. --set vocab_size=4000 or sts.lr=5e-5")
        stage, dot, name = key.partition(".")
        if dot:
            stages.setdefault(stage, {})[name] = _set_value(text)
        else:
            settings[key] = _set_value(text)
    return settings, stages


def _substitute(value: Any, names: dict[str, Any], used: set[str], where: str) -> Any:
    """``value`` with each ``${name}`` replaced; a string that is one reference keeps the value's type."""
    if isinstance(value, list):
        return [_substitute(v, names, used, where) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, names, used, where) for k, v in value.items()}
    if not isinstance(value, str):
        return value

    def look(name: str) -> Any:
        if name not in names:
            raise KalbertError(f"{where}: unknown reference ${{{name}}}",
                               f"settings and earlier stages: {', '.join(names) or 'none'}")
        used.add(name)
        return names[name]

    whole = _REF.fullmatch(value)
    return look(whole[1]) if whole else _REF.sub(lambda m: str(look(m[1])), value)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _data_and_files(values: dict[str, Any], folders: set[str]) -> tuple[list[str], list[str]]:
    data, files = [], []
    for text in (s for name, v in values.items() if name != "out" for s in _strings(v)):
        if text.partition(":")[0] in DATASETS:
            data.append(text)
        elif ("/" in text or text.endswith((".tsv", ".txt", ".json", ".gz"))) and not any(
                text == f or text.startswith(f + "/") for f in folders):
            files.append(text)
    return sorted(set(data)), sorted(set(files))


def _stage(entry: dict[str, Any], where: str, root: Path, names: dict[str, Any], earlier: list[Stage],
           overrides: dict[str, dict[str, Any]]) -> Stage:
    """One stage resolved: references replaced, ``--set`` values applied, its config built and checked."""
    name, verb = str(entry["stage"]), get_verb(str(entry["verb"]))
    if name in names:
        raise KalbertError(f"{where}: the name is used twice (or is a setting)")
    config = dict(entry.get("config") or {})
    if "out" in config:
        raise KalbertError(f"{where}: remove its out", f"the runner writes stage {name} to {root / name}")
    config.update(overrides.pop(name, {}))
    used: set[str] = set()
    config = _substitute(config, names, used, where)
    folder = root / name
    cls = verb.config_class()
    built = build_config(cls, flatten_values(cls, {**config, "out": str(folder)}, where))
    data, files = _data_and_files(config_values(built), {str(s.folder) for s in earlier})
    return Stage(name, verb, built, folder, [s.name for s in earlier if s.name in used], data, files)


def load_recipe(ref: str | Path, out: str | None = None, overrides: list[str] = ()) -> Recipe:
    """Read and resolve a recipe: every stage's config is built (and checked) before anything runs."""
    path = recipe_path(ref)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KalbertError(f"recipe {path} is not UTF-8 text (byte {exc.start}); a recipe is a YAML file",
                           "give a recipe such as recipes/demo.yaml, saved as UTF-8") from None
    try:
        raw = _yaml_value(text)
    except Exception as exc:  # noqa: BLE001 - yaml raises its own error types
        raise KalbertError(f"cannot read recipe {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("stages"), list) or not raw["stages"]:
        raise KalbertError(f"{path} is not a recipe", "a mapping with out, settings and a list of stages")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise KalbertError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
                           f"known: {', '.join(sorted(_KEYS))}")
    setting_overrides, stage_overrides = _overrides(list(overrides))
    settings = dict(raw.get("settings") or {})
    unknown = sorted(set(setting_overrides) - set(settings))
    if unknown:
        raise KalbertError(f"--set: {path} has no setting {', '.join(unknown)}",
                           f"settings: {', '.join(settings) or 'none'}; a stage's config: --set STAGE.key=value")
    settings.update(setting_overrides)
    root = Path(out or raw.get("out") or f"outputs/{path.stem}")
    names: dict[str, Any] = dict(settings)
    stages: list[Stage] = []
    for index, entry in enumerate(raw["stages"]):
        if not isinstance(entry, dict) or not {"stage", "verb"} <= set(entry) or set(entry) - _STAGE_KEYS:
            raise KalbertError(f"{path}: stage {index + 1} must have stage, verb and config keys only")
        stage = _stage(entry, f"{path}: stage {entry['stage']}", root, names, stages, stage_overrides)
        stages.append(stage)
        names[stage.name] = str(stage.folder)
    if stage_overrides:
        raise KalbertError(f"--set: {path} has no stage {', '.join(stage_overrides)}",
                           f"stages: {', '.join(s.name for s in stages)}")
    then = [_substitute(str(command), names, set(), f"{path}: then") for command in raw.get("then") or []]
    return Recipe(path, hashlib.sha256(text.encode()).hexdigest(), root, settings, stages, then)


def _record_sha(stage: Stage) -> str | None:
    record = stage.record_folder / META_FILE
    return hashlib.sha256(record.read_bytes()).hexdigest() if record.is_file() else None


def stage_cost(stage: Stage) -> dict[str, Any] | None:
    """What the run that finished ``stage`` took: wall seconds, the machine and its load as the record was
    written (None while unfinished, or for a folder recorded before recipe stages were timed)."""
    meta = read_meta(stage.record_folder)
    seconds = (meta.get("recipe") or {}).get("wall_seconds")
    if seconds is None:
        return None
    hardware = meta.get("hardware") or {}
    return {"wall_seconds": seconds, "machine": describe_machine(hardware),
            "load_avg_1min": hardware.get("load_avg_1min")}


def _cost_text(cost: dict[str, Any] | None) -> str:
    if cost is None:
        return ""
    load = f", load {cost['load_avg_1min']:.1f}" if cost.get("load_avg_1min") is not None else ""
    return f" in {cost['wall_seconds'] / 60:.1f} min on {cost['machine']}{load}"


def _block(recipe: Recipe, stage: Stage) -> dict[str, Any]:
    """What a stage's records say about the recipe that made them: every stage up to this one, its config and
    data, what each earlier one cost, and the records of the stages it read."""
    done = recipe.stages[: recipe.stages.index(stage) + 1]
    return {
        "file": str(recipe.path), "sha256": recipe.sha256, "settings": recipe.settings, "stage": stage.name,
        "verb": stage.verb.name, "config": stage.values, "data": stage.data,
        "inputs": {name: _record_sha(recipe.stage(name)) for name in stage.reads},
        "stages": [{"stage": s.name, "verb": s.verb.name, "out": str(s.folder), "command": s.command,
                    "config": s.values, "data": s.data, **({"cost": stage_cost(s)} if s is not stage else {})}
                   for s in done],
    }


def _same_config(recorded: Any, stage: Stage) -> bool:
    """Whether a record's stage config is ``stage``'s; a setting its verb gained since the record was written
    matches while the stage leaves it at its default."""
    if not isinstance(recorded, dict):
        return False
    defaults = json.loads(json.dumps({s.name: s.default for s in config_settings(type(stage.config))}, default=str))
    added = {name: value for name, value in stage.values.items() if name not in recorded and value == defaults[name]}
    return {**recorded, **added} == stage.values


def stage_state(recipe: Recipe, stage: Stage) -> tuple[str, str]:
    """("done" | "todo" | "changed", why) for a stage's folder as it is now."""
    meta = read_meta(stage.record_folder)
    if meta.get("kind") and (stage.verb.keeps_kind or meta["kind"] == stage.verb.kind):  # keeps_kind: any kind
        block = meta.get("recipe") or {}
        if block.get("stage") != stage.name or not _same_config(block.get("config"), stage):
            return "changed", "was made with other settings"
        if block.get("inputs") != {name: _record_sha(recipe.stage(name)) for name in stage.reads}:
            return "changed", f"was made from other {', '.join(stage.reads)} folders"
        return "done", ""
    if not stage.folder.exists() or (stage.verb.record and not stage.record_folder.exists()):
        return "todo", ""  # absent, or a run folder its verb resumes (pretraining)
    return "changed", f"holds no {stage.verb.kind or 'kalbert'} record of this stage"


def _summary(stage: Stage) -> str:
    metrics = read_meta(stage.record_folder).get("metrics") or []
    latest = {m["data"]: m["value"] for m in metrics  # a record lists its parents' stages' scores first
              if isinstance(m, dict) and m.get("metric") in ("spearman_cosine", "ndcg_at_10")}
    shown = ", ".join(f"{data} {100 * value:.2f}" for data, value in latest.items())
    return f"  -> {stage.record_folder}{_cost_text(stage_cost(stage))}" + (f" ({shown})" if shown else "")


def run_recipe(recipe: Recipe, until: str | None = None, overwrite: bool = False, dry_run: bool = False,
               echo: Callable[[str], None] = print) -> dict[str, Path]:
    """Run every stage not done yet, in order, up to ``until``; return the stage folders by name."""
    last = recipe.stage(until) if until else recipe.stages[-1]
    stages = recipe.stages[: recipe.stages.index(last) + 1]
    for stage in stages:
        state, why = stage_state(recipe, stage)
        cost = _cost_text(stage_cost(stage)) if state == "done" else ""
        if dry_run:
            data = f"  data: {', '.join(stage.data)}" if stage.data else ""
            files = f"  files: {', '.join(stage.files)}" if stage.files else ""
            echo(f"[{stage.name}] {state}{cost}{f' ({why})' if why else ''}{data}{files}\n  {stage.command}")
            continue
        if state == "done":
            echo(f"[{stage.name}] done{cost}: {stage.record_folder}")
            continue
        if state == "changed" and not overwrite:
            raise KalbertError(f"stage {stage.name}: {stage.folder} {why}",
                               "pass --overwrite to rebuild it and the stages that read it, or --out another folder")
        echo(f"[{stage.name}] {stage.command}")
        with recipe_stage(_block(recipe, stage)):
            stage.verb.run(stage.config, overwrite=state == "changed")
        echo(_summary(stage))
    if last is recipe.stages[-1]:
        for command in recipe.then:
            echo(f"$ kalbert {command}")
            if not dry_run:
                _run_command(command)
    return {stage.name: stage.record_folder for stage in stages}


def _run_command(command: str) -> None:
    from kalbert.cli.main import main

    code = main(shlex.split(command))
    if code:
        raise KalbertError(f"`kalbert {command}` exited with {code}")
