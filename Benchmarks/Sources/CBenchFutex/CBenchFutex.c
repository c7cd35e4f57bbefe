// The futex calls of the promise lock (include/CBenchFutex.h is a link to
// Sources/CFutex/futex.h), for the copy of that lock the contention
// benchmark measures beside the other locks. Nothing to compile here: the
// calls are static inline in the header.
#include "CBenchFutex.h"
