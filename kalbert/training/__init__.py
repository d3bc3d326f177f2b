"""What every fine-tuning stage shares (sentence training, multiple choice, extractive QA), laid out as
torchtune's ``training`` package: the optimiser and schedule (:mod:`.optim`), best-checkpoint keeping
(:mod:`.best`), the device (:mod:`.device`), the resumable working folder (:mod:`.resume`) and the one
loop they all run (:mod:`.loop`)."""

from kalbert.training.best import BestCheckpoint
from kalbert.training.device import default_device
from kalbert.training.loop import Evaluation, FitResult, LoopSettings, shuffled_batches, train_loop
from kalbert.training.optim import adamw, decay_split, linear_warmup
from kalbert.training.resume import RunFolder

__all__ = ["BestCheckpoint", "Evaluation", "FitResult", "LoopSettings", "RunFolder", "adamw", "decay_split",
           "default_device", "linear_warmup", "shuffled_batches", "train_loop"]
