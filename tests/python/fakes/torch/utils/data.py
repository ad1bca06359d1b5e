"""torch.utils.data stand-in: a DataLoader over a list, batching by slicing."""


class DataLoader:
    def __init__(self, dataset, batch_size=1, fail_at=None):
        self.dataset = dataset
        self.batch_size = batch_size
        self.fail_at = fail_at

    def __len__(self):
        return (len(self.dataset) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        for i in range(len(self)):
            if self.fail_at is not None and i == self.fail_at:
                raise RuntimeError("fake DataLoader: worker failed")
            yield self.dataset[i * self.batch_size:(i + 1) * self.batch_size]
