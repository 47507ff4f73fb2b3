/* gso_write: the write wireguard-go (0.0.20230223+) and Tailscale make after coalescing TCP
 * segments (tailscale/tailscale#13041), with the documented tun API only
 * (Documentation/networking/tuntap.rst, include/uapi/linux/if_tun.h,
 * include/uapi/linux/virtio_net.h): an IFF_TUN | IFF_NO_PI | IFF_VNET_HDR device with
 * TUN_F_CSUM | TUN_F_TSO4, brought up, then two NEEDS_CSUM TCPV4 GSO writes with
 * gso_size 100 and csum_start 20, csum_offset 16 (needed = 20 + max(20, 18) = 40):
 *   whole: 40 header bytes + 200 payload (240 bytes; 240 % 100 = 40, not > 40),
 *   tail:  40 header bytes + 201 payload (241 bytes; 241 % 100 = 41 > 40).
 * Each prints "KEY=<bytes written>" or "KEY=E<name>". The stable window of e269d79c7d35
 * ("net: missing check virtio") refuses `whole` with EINVAL; before and after it both are
 * accepted (docs/tap-write.md#gso-regression-2024). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned short ip_csum(const unsigned char *p, int len)
{
	unsigned long s = 0;
	for (int i = 0; i + 1 < len; i += 2)
		s += (p[i] << 8) | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned short)~s;
}

/* One GSO write of `payload` bytes: vnet header, IPv4 10.0.0.3 -> 10.0.0.2, TCP 4000 -> 5000
 * (ACK|PSH, no options), the payload. */
static void gso_write(int fd, const char *key, int payload)
{
	unsigned char buf[sizeof(struct virtio_net_hdr) + 40 + 512];
	struct virtio_net_hdr vh = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
		.hdr_len = 40,
		.gso_size = 100,
		.csum_start = 20,
		.csum_offset = 16,
	};
	unsigned char *ip = buf + sizeof(vh), *tcp = ip + 20;
	int len = 40 + payload;
	long r;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, &vh, sizeof(vh));
	ip[0] = 0x45;
	ip[2] = len >> 8;
	ip[3] = len & 0xff;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, "\x0a\x00\x00\x03\x0a\x00\x00\x02", 8);
	unsigned short c = ip_csum(ip, 20);
	ip[10] = c >> 8;
	ip[11] = c & 0xff;
	tcp[0] = 4000 >> 8;
	tcp[1] = 4000 & 0xff;
	tcp[2] = 5000 >> 8;
	tcp[3] = 5000 & 0xff;
	tcp[7] = 1;  /* seq 1 */
	tcp[11] = 1; /* ack 1 */
	tcp[12] = 5 << 4;
	tcp[13] = 0x18; /* ACK | PSH */
	tcp[14] = 0xff;
	memset(tcp + 20, 'x', payload);
	r = write(fd, buf, sizeof(vh) + len);
	if (r < 0)
		printf("%s=E%s\n", key, errno == EINVAL ? "INVAL" : errno == EIO ? "IO" : "?");
	else
		printf("%s=%ld\n", key, r);
}

int main(void)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR), sock;

	if (fd < 0) {
		perror("open /dev/net/tun");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
	strcpy(ifr.ifr_name, "gso0");
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4) < 0) {
		perror("TUNSETIFF / TUNSETOFFLOAD");
		return 1;
	}
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0 || ioctl(sock, SIOCGIFFLAGS, &ifr) < 0) {
		perror("SIOCGIFFLAGS");
		return 1;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0) {
		perror("SIOCSIFFLAGS");
		return 1;
	}
	gso_write(fd, "whole", 200);
	gso_write(fd, "tail", 201);
	return 0;
}
