"""kalbert.hardware: one parser of /proc/cpuinfo, and what its flags mean, for every CPU kalbert meets.
Every test fakes the CPU, so the suite says the same on AVX2, AVX-512, AMX and ARM machines."""

from __future__ import annotations

import json

import pytest

from kalbert import hardware

AVX2 = {"sse4_2", "avx", "avx2", "fma"}
AVX512 = AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512cd"}
AVX512_VNNI = AVX512 | {"avx512_vnni"}
ZEN4 = AVX512_VNNI | {"avx512_bf16"}
SAPPHIRE_RAPIDS = ZEN4 | {"amx_tile", "amx_bf16", "amx_int8", "avx_vnni"}
NEOVERSE_V1 = {"fp", "asimd", "asimddp", "i8mm", "bf16", "sve"}


@pytest.mark.parametrize("flags, arch, bf16, int8", [
    (AVX2, "x86_64", None, None),
    (AVX2 | {"avx_vnni"}, "x86_64", None, "AVX-VNNI"),
    (AVX512, "x86_64", None, None),
    (AVX512_VNNI, "x86_64", None, "AVX512-VNNI"),
    (ZEN4, "x86_64", "AVX512-BF16", "AVX512-VNNI"),
    (SAPPHIRE_RAPIDS, "x86_64", "AMX-BF16", "AMX-INT8"),
    ({"fp", "asimd"}, "aarch64", None, None),
    ({"fp", "asimd", "asimddp"}, "aarch64", None, "ARM dotprod"),
    (NEOVERSE_V1, "arm64", "ARM bf16", "ARM i8mm"),
    ({"bf16", "i8mm"}, "x86_64", None, None),  # ARM feature names mean nothing on x86
])
def test_native_bf16_and_int8_dot_product(fake_cpu, flags, arch, bf16, int8):
    fake_cpu(flags, arch=arch)
    assert hardware.native_bf16() == hardware.native_bf16("cpu") == bf16
    assert hardware.int8_dot_product() == int8


def test_parser_reads_x86_flags_model_and_cores():
    text = "".join(f"processor\t: {i}\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\n"
                   f"core id\t\t: {i // 2}\nflags\t\t: fpu avx2 avx512f amx_bf16\n\n" for i in range(4))
    info = hardware.parse_cpuinfo(text, "x86_64")
    assert info.model == "Intel(R) Xeon(R) Platinum 8480+" and info.arch == "x86_64"
    assert info.flags == {"fpu", "avx2", "avx512f", "amx_bf16"}
    assert (info.physical_cores, info.logical_cpus) == (2, 4)  # two hyperthreads per core


def test_parser_reads_arm_features_and_names_the_implementer():
    text = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd asimddp i8mm bf16 sve\nCPU implementer\t: 0x41\n" \
           "CPU part\t: 0xd40\n"
    info = hardware.parse_cpuinfo(text, "aarch64")
    assert info.flags == {"fp", "asimd", "asimddp", "i8mm", "bf16", "sve"}
    assert info.model == "Arm Neoverse V1" and info.arch == "aarch64"


def test_without_proc_cpuinfo_the_machine_name_decides(monkeypatch):
    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: "")
    monkeypatch.setattr(hardware, "_machine", lambda: "arm64")  # macOS on Apple silicon
    assert hardware.cpu_arch() == "aarch64" and hardware.cpu_flags() == {"asimd"}
    monkeypatch.setattr(hardware, "_machine", lambda: "AMD64")  # Windows
    assert hardware.cpu_arch() == "x86_64" and hardware.cpu_flags() == frozenset()
    assert hardware.native_bf16() is None and hardware.int8_dot_product() is None


def test_monkeypatching_cpu_flags_alone_is_enough(monkeypatch):
    monkeypatch.setattr(hardware, "_machine", lambda: "x86_64")
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    assert hardware.native_bf16() == "AVX512-BF16"
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2"}))
    assert hardware.native_bf16() is None  # read on every call: nothing cached


def test_hardware_block_is_json_and_names_the_faked_cpu(fake_cpu):
    fake_cpu(ZEN4 | {"sse", "pni"}, model="AMD EPYC 9654 96-Core Processor", cpus=2)
    block = json.loads(json.dumps(hardware.hardware_block()))
    assert block["cpu"] == "AMD EPYC 9654 96-Core Processor" and block["arch"] == "x86_64"
    assert block["instruction_sets"] == ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                         "avx512_vnni", "avx512_bf16"]  # fixed order, irrelevant flags left out
    assert block["native_bf16"] == "AVX512-BF16" and block["int8_dot_product"] == "AVX512-VNNI"
    assert (block["physical_cores"], block["logical_cpus"]) == (2, 2)
    assert block["torch_threads"] >= 1 and block["torch_cpu_capability"]
    assert set(block["versions"]) == {"python", "torch", "transformers", "sentence-transformers", "onnxruntime",
                                      "kalbert"}
    assert "load_avg_1min" in block
    assert hardware.describe_cpu(block) == "AMD EPYC 9654, AVX-512 VNNI/BF16"


@pytest.mark.parametrize("flags, arch, model, label", [
    (AVX2, "x86_64", "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", "Intel Core i7-8700, AVX2"),
    (AVX2 | {"avx_vnni"}, "x86_64", "12th Gen Intel(R) Core(TM) i9-12900K",
     "12th Gen Intel Core i9-12900K, AVX2 + AVX-VNNI"),
    (AVX512, "x86_64", "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "Intel Xeon Gold 6148, AVX-512"),
    (AVX512_VNNI, "x86_64", "Intel(R) Xeon(R) Gold 6248", "Intel Xeon Gold 6248, AVX-512 VNNI"),
    (SAPPHIRE_RAPIDS, "x86_64", "Intel(R) Xeon(R) Platinum 8480+",
     "Intel Xeon Platinum 8480+, AMX-BF16/INT8, AVX-512 VNNI/BF16"),
    (NEOVERSE_V1, "aarch64", "Fake CPU", "Arm Neoverse N1, NEON dotprod/i8mm/BF16/SVE"),
])
def test_describe_cpu_is_one_short_label(fake_cpu, flags, arch, model, label):
    fake_cpu(flags, arch=arch, model=model)
    assert hardware.describe_cpu(hardware.hardware_block()) == label


def test_describe_cpu_of_old_or_annotated_results():
    assert hardware.describe_cpu(None) == hardware.describe_cpu({}) == "CPU not recorded"
    later = {"recorded_later": True, "cpu": "Intel Xeon with AMX (AVX-512 VNNI, AMX-BF16)"}
    assert hardware.describe_cpu(later) == "Intel Xeon with AMX (AVX-512 VNNI, AMX-BF16) (recorded later)"


def test_this_machine_is_described_whatever_it_is():
    """The real reader on the real machine: no assumption about which CPU this is."""
    block = hardware.hardware_block()
    assert block["cpu"] and block["arch"] and block["logical_cpus"] >= 1
    assert set(block["instruction_sets"]) <= set(hardware.X86_SETS) | set(hardware.ARM_SETS)
    assert hardware.describe_cpu(block).startswith(hardware._short_model(block["cpu"]))


def test_kalbert_env_lists_the_faked_cpu(fake_cpu, capsys):
    from kalbert.cli.main import main

    fake_cpu(ZEN4, model="AMD EPYC 9654 96-Core Processor")
    assert main(["env"]) == 0
    text = capsys.readouterr().out
    assert "- CPU: AMD EPYC 9654 96-Core Processor" in text
    assert "- Instruction sets: sse4_2, avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512_vnni, avx512_bf16" in text
    assert "- Native bf16: AVX512-BF16" in text and "- int8 dot product: AVX512-VNNI" in text
    assert "- torch version: " in text and "- Torch CPU capability: " in text
    assert main(["env", "--json"]) == 0
    block = json.loads(capsys.readouterr().out)
    assert {"avx512f", "avx512_vnni", "avx512_bf16"} <= set(block["instruction_sets"])
    assert block == {**block, "cpu": "AMD EPYC 9654 96-Core Processor", "native_bf16": "AVX512-BF16"}
    fake_cpu(AVX2)
    assert main(["env"]) == 0
    assert "- Native bf16: no (bf16 is emulated on this CPU" in capsys.readouterr().out


def test_kalbert_env_json_names_what_this_cpu_has(capsys):
    """On the real machine, whichever it is: the JSON names exactly the listed sets the kernel reports."""
    from kalbert.cli.main import main

    assert main(["env", "--json"]) == 0
    block = json.loads(capsys.readouterr().out)
    flags = hardware.cpu_flags()
    listed = hardware.ARM_SETS if hardware.cpu_arch() == "aarch64" else hardware.X86_SETS
    assert block["instruction_sets"] == [name for name in listed if name in flags]


def test_kalbert_env_help_has_an_example(capsys):
    from kalbert.cli.main import main

    with pytest.raises(SystemExit):
        main(["env", "--help"])
    assert "kalbert env --json" in capsys.readouterr().out


def test_a_gpu_run_names_its_gpu_beside_the_cpu():
    block = {"cpu": "Intel(R) Xeon(R) Processor", "arch": "x86_64", "instruction_sets": ["avx2"], "cuda": "NVIDIA H200"}
    assert hardware.describe_machine(block) == f"{hardware.describe_cpu(block)} + NVIDIA H200"
    assert hardware.describe_machine({**block, "cuda": None}) == hardware.describe_cpu(block)
