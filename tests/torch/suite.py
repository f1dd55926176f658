"""Several of the torch tests in one torchrun job (tests/torch/run_tests.sh):
each module's main() in turn, in the same processes. Each one initialises and
destroys its own process group, as a program that makes a new group after
destroying the last does, and prints its own verdict line; the job's start-up
(torch's import, torchrun's rendezvous: seconds a job on 2 cores) is paid once.
    torchrun --nproc-per-node 4 suite.py ops ddp fsdp"""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    for name in sys.argv[1:]:
        importlib.import_module(name).main()
