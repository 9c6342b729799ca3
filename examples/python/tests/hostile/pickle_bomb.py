"""Test fixture, never an example: a hostile operator for the hostile-tenant suite
(engine/tests/all/hostile). For every batch it answers one pickle of 100,000 records that
all share one 1 MiB string through the pickle memo (`pickle.dumps` without weirpy's fast
mode): a document of ~300 KB that reads as ~100 GB of records. The host's pickle reader
stops at the operator's output limit, and the job fails saying so."""

import pickle

from weirpy.operator import OperatorBase

BIG = "x" * (1 << 20)
COPIES = 100_000


class Operator(OperatorBase):
    NAME = "pickle-bomb-python"

    def process_batch(self, records, out):
        # Asks the host for pickled batches; `process_encoded` below answers them.
        pass

    def process_encoded(self, input, data):
        record = (b"k", BIG, 0)
        return pickle.dumps([record] * COPIES, 5)
