"""Side-by-side measurements (``make bench``): run each script from the repository root as
``python -m bench.<script>``; they import socbench, ``deployments`` and the tests' support
(``tests.support``, ``tests.vllm_server``) as packages."""
