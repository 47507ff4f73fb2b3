/* far_ping: opens tap fp0 (IFF_TAP | IFF_NO_PI), brings it up, asks for 10.0.0.2 by ARP
 * and pings it (ICMP echo, id 0x4242, seq 1, 16 bytes of payload) from 10.0.0.1,
 * 02:00:00:00:00:01. Prints the deterministic fields of both answers, "key=value".
 * With argument "real" it first gives fp0 the address 10.0.0.2/24 (ip addr add), so
 * the real kernel is the far side. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static const unsigned char me[6] = {2, 0, 0, 0, 0, 1};
static const unsigned char my_ip[4] = {10, 0, 0, 1}, far_ip[4] = {10, 0, 0, 2};

static unsigned short csum(const unsigned char *p, int n)
{
	unsigned long s = 0;
	for (int i = 0; i + 1 < n; i += 2)
		s += (p[i] << 8) | p[i + 1];
	if (n & 1)
		s += p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned short)~s;
}

static void put16(unsigned char *p, unsigned v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static unsigned get16(const unsigned char *p)
{
	return (p[0] << 8) | p[1];
}

/* Reads until a frame of `ethertype` (at most 20 frames): its length, or -1. */
static int read_type(int fd, unsigned char *buf, int len, unsigned ethertype)
{
	for (int i = 0; i < 20; i++) {
		int n = read(fd, buf, len);
		if (n < 0) {
			printf("read=E%d\n", errno);
			return -1;
		}
		if (n >= 14 && get16(buf + 12) == ethertype)
			return n;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct ifreq ifr;
	unsigned char f[1600], r[1600], far_mac[6];
	int fd = open("/dev/net/tun", O_RDWR), s = socket(AF_INET, SOCK_DGRAM, 0), n;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "fp0");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		printf("tunsetiff=E%d\n", errno);
		return 1;
	}
	ifr.ifr_flags = IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		printf("up=E%d\n", errno);
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "real") == 0 &&
	    system("ip addr add 10.0.0.2/24 dev fp0") != 0)
		return 1;

	/* ARP request: who has 10.0.0.2, tell 10.0.0.1. */
	memset(f, 0xff, 6);
	memcpy(f + 6, me, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);
	put16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, 1);
	memcpy(f + 22, me, 6);
	memcpy(f + 28, my_ip, 4);
	memset(f + 32, 0, 6);
	memcpy(f + 38, far_ip, 4);
	memset(f + 42, 0, 18);
	printf("arp_write=%zd\n", write(fd, f, 60));
	n = read_type(fd, r, sizeof(r), 0x0806);
	if (n < 42)
		return 2;
	memcpy(far_mac, r + 22, 6);
	printf("arp_op=%u\n", get16(r + 20));
	printf("arp_to_me=%d\n", memcmp(r, me, 6) == 0 && memcmp(r + 32, me, 6) == 0);
	printf("arp_spa=%u.%u.%u.%u\n", r[28], r[29], r[30], r[31]);
	printf("arp_tpa=%u.%u.%u.%u\n", r[38], r[39], r[40], r[41]);
	printf("arp_sha_is_src=%d\n", memcmp(r + 6, far_mac, 6) == 0);

	/* ICMP echo request to the MAC the ARP reply gave. */
	memcpy(f, far_mac, 6);
	memcpy(f + 6, me, 6);
	put16(f + 12, 0x0800);
	unsigned char *ip = f + 14, *icmp = ip + 20;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 8 + 16);
	put16(ip + 4, 7);
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, my_ip, 4);
	memcpy(ip + 16, far_ip, 4);
	put16(ip + 10, csum(ip, 20));
	memset(icmp, 0, 8);
	icmp[0] = 8;
	put16(icmp + 4, 0x4242);
	put16(icmp + 6, 1);
	for (int i = 0; i < 16; i++)
		icmp[8 + i] = 'a' + i;
	put16(icmp + 2, csum(icmp, 24));
	printf("icmp_write=%zd\n", write(fd, f, 14 + 44));
	n = read_type(fd, r, sizeof(r), 0x0800);
	if (n < 14 + 44)
		return 3;
	unsigned char *rip = r + 14, *ricmp = rip + (rip[0] & 0xf) * 4;
	printf("eth_to_me=%d\n", memcmp(r, me, 6) == 0 && memcmp(r + 6, far_mac, 6) == 0);
	printf("ip_len=%u\n", get16(rip + 2));
	printf("ip_ttl=%u\n", rip[8]);
	printf("ip_proto=%u\n", rip[9]);
	printf("ip_csum_ok=%d\n", csum(rip, 20) == 0);
	printf("ip_src=%u.%u.%u.%u\n", rip[12], rip[13], rip[14], rip[15]);
	printf("ip_dst=%u.%u.%u.%u\n", rip[16], rip[17], rip[18], rip[19]);
	printf("icmp_type=%u\n", ricmp[0]);
	printf("icmp_code=%u\n", ricmp[1]);
	printf("icmp_csum=0x%04x\n", get16(ricmp + 2));
	printf("icmp_id=0x%04x\n", get16(ricmp + 4));
	printf("icmp_seq=%u\n", get16(ricmp + 6));
	printf("icmp_payload_same=%d\n", memcmp(ricmp + 8, icmp + 8, 16) == 0);
	return 0;
}
