"""torch.backends.cudnn of the sample torch. On ROCm builds real torch answers for MIOpen here;
the stand-in SDK has no MIOpen, so this torch is built without it, as a torch built with
USE_CUDNN=OFF answers."""


def is_available():
    return False


def version():
    return None
