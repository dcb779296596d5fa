/* udp_stats.h: the kernel's count of UDP datagrams dropped because a socket's
 * receive buffer was full, for tests and benchmarks that must tell the code's
 * losses from the loaded machine's (a process not scheduled in time to read). */
#ifndef STEERD_UDP_STATS_H
#define STEERD_UDP_STATS_H

#include <stdint.h>

/* RcvbufErrors of the Udp line of /proc/net/snmp: system-wide, every socket;
 * 0 when the file cannot be read. Compare two readings around a run. */
uint64_t udp_rcvbuf_errors(void);

#endif
