// Empty: a C target needs a source file; CEpoll.h is all there is.
#include "CEpoll.h"
