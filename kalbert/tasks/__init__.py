"""Fine-tuned task heads on kalbert's ALBERT models and their BERT teacher (multiple choice)."""

from kalbert.tasks.multiple_choice import MC_TASKS, MCTrainConfig, predict_mc, train_mc

__all__ = ["MC_TASKS", "MCTrainConfig", "predict_mc", "train_mc"]
