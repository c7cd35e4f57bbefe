// epoll for the fan-out benchmark's watcher: Swift's Glibc module does not
// export <sys/epoll.h>.
#include <sys/epoll.h>
