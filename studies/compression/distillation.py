"""Distillation of the finetuned albert_small into an albert_mini-shaped student.

    make figures NAME=compression-distillation

Student: E=64, H=128, 2 heads, I=512, 2 layers, no sharing (albert_mini with half the
layers and no sharing; with 4 layers it was 2.8-3.1x faster than the teacher, with 3
layers 2.8x). Trained 3000 steps from scratch twice, with the same schedule: distilled
(soft targets at T=2 plus hard labels, alpha=0.5) and directly on the labels (the small
model trained directly). Teacher and students are timed by compression-latency.
"""

from common import (export, keras_accuracy, load_start, log, save, save_result,
                                 scored, stage_config)

from albert_tf.checkpoints import build_task_model
from albert_tf.compression import data as data_lib
from albert_tf.compression.compressor import compress_model, student_config

STEPS = 3000
STUDENT = "albert_mini"
STUDENT_LAYERS = 2


def main() -> None:
    model, task_info, vocab, inputs = load_start()
    config = stage_config(stages=["distillation"], distillation__student_config=STUDENT,
                          distillation__temperature=2.0, distillation__alpha=0.5,
                          distillation__train_steps=STEPS, distillation__learning_rate=5e-4)
    teacher_params = model.count_params()
    cfg = student_config(config, model.albert_config).replace(
        sharing="none", num_hidden_layers=STUDENT_LAYERS)
    config_path = "/tmp/albert_tf_compression_student.json"
    cfg.to_json(config_path)
    config.distillation.student_config = config_path
    student, report = compress_model(model, task_info, vocab, config, log)
    directory = save(student, "distilled", task_info, vocab)
    save_result("distillation", {
        "method": f"distilled student (H=128, L={STUDENT_LAYERS}, no sharing)", "model_dir": directory,
        "params": student.count_params(), "teacher_params": teacher_params,
        "student_config": cfg.to_dict(),
        "keras_dev_accuracy": report["dev"]["distillation"]["accuracy"],
        "teacher_dev_accuracy": report["dev"]["start"]["accuracy"],
        **scored(export(directory, "distilled"), inputs)})

    # The same student trained directly on the labels, same steps and schedule.
    direct = build_task_model(cfg, task_info)
    data_lib.compile_stage(direct, config.optimizer, STEPS, 5e-4)
    data_lib.fit_steps(direct, inputs.train_dataset(32, config.seed), STEPS, log_every=300)
    directory = save(direct, "student_direct", task_info, vocab)
    save_result("student_direct", {
        "method": "same student trained directly (no teacher)", "model_dir": directory,
        "params": direct.count_params(), "keras_dev_accuracy": keras_accuracy(direct, inputs),
        **scored(export(directory, "student_direct"), inputs)})


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
