"""python -m unienv.deploy run policy.onnx --model M     the standalone runner (unienv.deploy.runner)
python -m unienv.deploy check policy.onnx --model M      every mismatch by name; exit status 1 on any

`check` reads ONNX and safetensors files through unienv's loaders (unienv.deploy.check, above
training: this command line sits with the tools);
`run` is the runner's own command line, the same as a copied runner.py's, except that a
Menagerie name is found as unienv.robots finds it (installed asset packages included)."""

import argparse
import sys

from unienv.deploy import runner


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] != ["check"]:
        if "--model" in argv[:-1]:  # a Menagerie name found where unienv.robots finds it
            from unienv.deploy.contract import model_path

            i = argv.index("--model") + 1
            argv[i] = model_path(argv[i])
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
    sys.exit(main())
