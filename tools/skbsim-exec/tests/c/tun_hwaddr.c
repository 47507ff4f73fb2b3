/* tun_hwaddr: a device's hardware address, SIOCGIFHWADDR / SIOCSIFHWADDR on a socket and on
 * the tun file itself, on a tap and a tun, one "key=value" line per step, so the same
 * binary can run on the real kernel (in a private netns) and under `skbsim exec`.
 * Failures print "E<errno name>". A tap's first address is random in the kernel, so only
 * its kind is printed (locally administered unicast or not). */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int sock;

static const char *err(void)
{
	switch (errno) {
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EBUSY: return "EBUSY";
	case EPERM: return "EPERM";
	default: return "E?";
	}
}

/* SIOCGIFHWADDR on fd `fd`: the family and, unless `kind_only`, the address. */
static void get(const char *key, int fd, const char *dev, int kind_only)
{
	struct ifreq ifr;
	unsigned char *a = (unsigned char *)ifr.ifr_hwaddr.sa_data;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		printf("%s=%s\n", key, err());
		return;
	}
	if (kind_only)
		printf("%s=family %d local-unicast %d\n", key, ifr.ifr_hwaddr.sa_family,
		       (a[0] & 3) == 2);
	else
		printf("%s=family %d %02x:%02x:%02x:%02x:%02x:%02x rest %02x%02x%02x%02x\n", key,
		       ifr.ifr_hwaddr.sa_family, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
		       a[12], a[13]);
}

static void set(const char *key, int fd, const char *dev, int family, const unsigned char *mac)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, dev);
	ifr.ifr_hwaddr.sa_family = family;
	memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
	if (ioctl(fd, SIOCSIFHWADDR, &ifr) < 0)
		printf("%s=%s\n", key, err());
	else
		printf("%s=0\n", key);
}

static int device(const char *dev, short type)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR);

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = type | IFF_NO_PI;
	strcpy(ifr.ifr_name, dev);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("TUNSETIFF");
		return -1;
	}
	return fd;
}

static void up(const char *dev)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, dev);
	ifr.ifr_flags = IFF_UP;
	if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)
		perror("SIOCSIFFLAGS");
}

int main(void)
{
	static const unsigned char mac[6] = { 0x00, 0xfe, 0x98, 0x94, 0xd2, 0x43 };
	static const unsigned char mac2[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
	static const unsigned char mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	static const unsigned char zero[6];
	int tap, tun;

	sock = socket(AF_INET, SOCK_DGRAM, 0);
	tap = device("hw0", IFF_TAP);
	tun = device("hw1", IFF_TUN);
	if (sock < 0 || tap < 0 || tun < 0)
		return 1;
	get("tap.first", sock, "hw0", 1);
	get("tap.first.file", tap, "hw0", 1);
	set("tap.set", sock, "hw0", ARPHRD_ETHER, mac);
	get("tap.get", sock, "hw0", 0);
	get("tap.get.file", tap, "hw0", 0);
	up("hw0");
	set("tap.set.up.file", tap, "hw0", ARPHRD_ETHER, mac2);
	get("tap.get.up", sock, "hw0", 0);
	set("tap.set.same", sock, "hw0", ARPHRD_ETHER, mac2);
	set("tap.set.multicast", sock, "hw0", ARPHRD_ETHER, mcast);
	set("tap.set.zero.file", tap, "hw0", ARPHRD_ETHER, zero);
	set("tap.set.family-none", sock, "hw0", ARPHRD_NONE, mac);
	get("tap.get.after", sock, "hw0", 0);
	get("tun.get", sock, "hw1", 0);
	get("tun.get.file", tun, "hw1", 0);
	set("tun.set", sock, "hw1", ARPHRD_NONE, mac);
	set("tun.set.file", tun, "hw1", ARPHRD_ETHER, mac);
	return 0;
}
