"""Run the same work in two threads at once, for the tests of concurrent use."""

import threading


def in_two_threads(work):
    """work(i, start) for i = 0, 1, each in its own thread, `start` a barrier both pass together;
    returns [result 0, result 1], after asserting that neither raised."""
    start, results, errors = threading.Barrier(2), {}, []

    def run(i):
        try:
            results[i] = work(i, start)
        except Exception as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    return [results[0], results[1]]
