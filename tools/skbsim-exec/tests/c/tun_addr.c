/* tun_addr: the AF_INET address ioctls socat's TUN address uses (SIOCSIFADDR,
 * SIOCSIFNETMASK) and their readers, on a tun and a tap, one "key=value" line per step, so
 * the same binary can run on the real kernel (in a private netns) and under `skbsim exec`.
 * Addresses print dotted, failures "E<errno name>". */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int sock;

static void get(const char *dev, const char *key, unsigned long cmd)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, dev);
	if (ioctl(sock, cmd, &ifr) < 0)
		printf("%s.%s=E%s\n", dev, key,
		       errno == EADDRNOTAVAIL ? "ADDRNOTAVAIL" : errno == EINVAL ? "INVAL" : "?");
	else
		printf("%s.%s=%s family=%d\n", dev, key, inet_ntoa(sin->sin_addr), sin->sin_family);
}

static void set(const char *dev, const char *key, unsigned long cmd, int family, const char *a)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, dev);
	sin->sin_family = family;
	inet_aton(a, &sin->sin_addr);
	if (ioctl(sock, cmd, &ifr) < 0)
		printf("%s.%s(%s)=E%s\n", dev, key, a,
		       errno == EADDRNOTAVAIL ? "ADDRNOTAVAIL" : errno == EINVAL ? "INVAL" : "?");
	else
		printf("%s.%s(%s)=0\n", dev, key, a);
}

static void device(const char *dev, short type)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR);

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = type | IFF_NO_PI;
	strcpy(ifr.ifr_name, dev);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("TUNSETIFF");
		return;
	}
	get(dev, "addr", SIOCGIFADDR);
	set(dev, "netmask", SIOCSIFNETMASK, AF_INET, "255.255.255.0");
	set(dev, "addr", SIOCSIFADDR, AF_INET, "224.0.0.1");
	set(dev, "addr", SIOCSIFADDR, AF_INET6, "10.1.2.3");
	set(dev, "addr", SIOCSIFADDR, AF_INET, "10.1.2.3");
	get(dev, "addr", SIOCGIFADDR);
	get(dev, "netmask", SIOCGIFNETMASK);
	set(dev, "netmask", SIOCSIFNETMASK, AF_INET, "255.0.255.0");
	set(dev, "netmask", SIOCSIFNETMASK, AF_INET, "255.255.255.0");
	set(dev, "addr", SIOCSIFADDR, AF_INET, "10.1.2.3");
	get(dev, "netmask", SIOCGIFNETMASK);
	set(dev, "addr", SIOCSIFADDR, AF_INET, "172.16.0.1");
	get(dev, "addr", SIOCGIFADDR);
	get(dev, "netmask", SIOCGIFNETMASK);
}

int main(void)
{
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	device("ad0", IFF_TUN);
	device("ad1", IFF_TAP);
	return 0;
}
