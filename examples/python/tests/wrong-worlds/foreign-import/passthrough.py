"""Test fixture: the smallest operator of the `foreign-import` world
(engine/test-guests/worlds/foreign-import: the operator world plus an import of
`weir:operator/cache`, which Weir does not provide). It forwards every batch unchanged and
never calls the cache, but the import is part of the component: Weir must refuse it."""

from wit_world import exports
from wit_world.imports import types


class Operator(exports.Operator):
    def describe(self):
        return types.OperatorInfo(name="passthrough-foreign-import-python", state_version=0, migrates_from=[])

    def open(self, context):
        pass

    def process(self, input, batch):
        return batch

    def on_watermark(self, timestamp):
        return types.Batch(data=b"", entries=[])

    def on_timer(self, key, timestamp):
        return types.Batch(data=b"", entries=[])

    def snapshot(self, checkpoint_id, full):
        return types.StateDelta(names=[], data=b"", entries=[])

    def restore(self, state_version, chunk):
        pass
