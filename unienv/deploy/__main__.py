"""python -m unienv.deploy run policy.onnx --model M     the standalone runner (unienv.deploy.runner)
python -m unienv.deploy check policy.onnx --model M      every mismatch by name; exit status 1 on any

`check` reads ONNX and safetensors files through unienv's loaders (unienv.deploy.check, above
training: this command line sits with the tools);
`run` is the runner's own command line, the same as a copied runner.py's, except that a
Menagerie name is found as unienv.robots finds it (installed asset packages included) and the
model's files are refused by kind (a FIFO, a device, a folder) before MuJoCo opens one. Any
refusal (a misspelled robot, a model MuJoCo cannot load, a policy or contract that does not fit)
is one `error:` line and exit status 2."""

import argparse
import sys

from unienv.deploy import runner
from unienv.deploy.contract import model_path
from unienv.errors import UnienvError
from unienv.utils.untrusted import mjcf_files


def console() -> int:
    """`python -m unienv.deploy`: main() with a refusal as one `error:` line and exit status 2
    (under `python -m unienv deploy`, the command line's own handler prints it)."""
    try:
        return main()
    except (UnienvError, runner.DeployError) as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] != ["check"]:
        if "--model" in argv[:-1]:  # a Menagerie name found where unienv.robots finds it
            i = argv.index("--model") + 1
            argv[i] = model_path(argv[i])
            mjcf_files(argv[i], "--model")
        return runner.main(argv)
    parser = argparse.ArgumentParser(prog="python -m unienv deploy check")
    parser.add_argument("policy", help="a policy file (.onnx or .safetensors) written by unienv")
    parser.add_argument(
        "--model",
        required=True,
        help="an MJCF path, or a Menagerie name (unitree_go1, unitree_g1/scene_mjx.xml)",
    )
    args = parser.parse_args(argv[1:])
    from unienv.deploy.check import check

    problems = check(args.policy, args.model)
    print("\n".join(problems) or f"{args.policy} fits {args.model}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(console())
