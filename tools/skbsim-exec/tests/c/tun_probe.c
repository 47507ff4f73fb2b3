/* tun_probe: what a tun/tap user does, one "key=value" line per step, so the same binary
 * can run on the real kernel (in a private netns) and under `skbsim exec`.
 * Numbers are decimal or 0x-hex; failures print "E<errno name>". */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *ename(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case EBADFD: return "EBADFD";
	case ENOTTY: return "ENOTTY";
	case EIO: return "EIO";
	case ENODEV: return "ENODEV";
	case ENXIO: return "ENXIO";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	default: return "E?";
	}
}

static void ret(const char *key, long r)
{
	if (r < 0)
		printf("%s=%s\n", key, ename(errno));
	else
		printf("%s=%ld\n", key, r);
}

static int pollin(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	int n = poll(&p, 1, 0);
	return n < 0 ? -1 : (p.revents & (POLLIN | POLLOUT));
}

int main(void)
{
	unsigned char frame[60], back[2048];
	struct ifreq ifr;
	unsigned int features = 0;
	int vnet = 0, sock, fd;

	fd = open("/dev/net/tun", O_RDWR);
	ret("open", fd < 0 ? -1 : 0);
	if (fd < 0)
		return 1;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "skb%d");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	ret("setiff", ioctl(fd, TUNSETIFF, &ifr));
	printf("name=%s\n", ifr.ifr_name);
	ret("getfeatures", ioctl(fd, TUNGETFEATURES, &features));
	printf("features=0x%x\n", features);
	ret("offload_csum_tso4", ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4));
	ret("offload_tso4_alone", ioctl(fd, TUNSETOFFLOAD, TUN_F_TSO4));
	memset(&ifr, 0, sizeof(ifr));
	ret("getiff", ioctl(fd, TUNGETIFF, &ifr));
	printf("getiff_flags=0x%x\n", ifr.ifr_flags);
	vnet = 4;
	ret("setvnethdrsz_4", ioctl(fd, TUNSETVNETHDRSZ, &vnet));
	ret("getvnethdrsz", ioctl(fd, TUNGETVNETHDRSZ, &vnet));
	printf("vnethdrsz=%d\n", vnet);
	ret("bogus_ioctl", ioctl(fd, _IOW('T', 250, int), &vnet));
	ret("getfeatures_fault", ioctl(fd, TUNGETFEATURES, (void *)8));

	sock = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "skb0");
	ret("siocgifflags", ioctl(sock, SIOCGIFFLAGS, &ifr));
	printf("ifflags=0x%x\n", (unsigned short)ifr.ifr_flags);
	ret("siocgifmtu", ioctl(sock, SIOCGIFMTU, &ifr));
	printf("mtu=%d\n", ifr.ifr_mtu);
	ret("siocgifindex", ioctl(sock, SIOCGIFINDEX, &ifr));
	printf("ifindex=%d\n", ifr.ifr_ifindex);
	ret("siocgifhwaddr", ioctl(sock, SIOCGIFHWADDR, &ifr));
	strcpy(ifr.ifr_name, "nosuchdev0");
	ret("siocgifflags_other", ioctl(sock, SIOCGIFFLAGS, &ifr));
	strcpy(ifr.ifr_name, "skb0");
	ifr.ifr_mtu = 9000;
	ret("siocsifmtu", ioctl(sock, SIOCSIFMTU, &ifr));
	ifr.ifr_mtu = 67;
	ret("siocsifmtu_67", ioctl(sock, SIOCSIFMTU, &ifr));
	ret("siocgifmtu_after", ioctl(sock, SIOCGIFMTU, &ifr));
	printf("mtu_after=%d\n", ifr.ifr_mtu);
	ifr.ifr_flags = IFF_UP;
	ret("siocsifflags_up", ioctl(sock, SIOCSIFFLAGS, &ifr));
	ret("siocgifflags_up", ioctl(sock, SIOCGIFFLAGS, &ifr));
	printf("ifflags_up_bit=0x%x\n", (unsigned short)ifr.ifr_flags & IFF_UP);
	close(sock);
	/* TUNSETLINK on a device that is up. */
	ret("setlink_up", ioctl(fd, TUNSETLINK, 1));

	/* The loopback far side: what is written comes back. */
	printf("poll_before=0x%x\n", pollin(fd));
	memset(frame, 0xff, 6);
	memcpy(frame + 6, "\x02\x00\x00\x00\x00\x01\x88\xb5", 8);
	for (int i = 14; i < 60; i++)
		frame[i] = i;
	ret("write", write(fd, frame, sizeof(frame)));
	printf("poll_after_write=0x%x\n", pollin(fd));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	long n = read(fd, back, sizeof(back));
	ret("read", n);
	printf("read_same=%d\n", n == 60 && memcmp(back, frame, 60) == 0);
	printf("poll_after_read=0x%x\n", pollin(fd));
	ret("read_empty", read(fd, back, sizeof(back)));
	/* The same frame through writev (two pieces) and readv (two buffers). */
	struct iovec wv[2] = { { frame, 14 }, { frame + 14, 46 } };
	struct iovec rv[2] = { { back, 10 }, { back + 10, sizeof(back) - 10 } };
	memset(back, 0, sizeof(back));
	ret("writev", writev(fd, wv, 2));
	n = readv(fd, rv, 2);
	ret("readv", n);
	printf("readv_same=%d\n", n == 60 && memcmp(back, frame, 60) == 0);
	ret("close", close(fd));

	/* The device went with its last file: the name is free again. */
	fd = open("/dev/net/tun", O_RDWR);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "skb0");
	ifr.ifr_flags = IFF_TUN;
	ret("reopen_setiff", ioctl(fd, TUNSETIFF, &ifr));
	printf("reopen_name=%s\n", ifr.ifr_name);
	ret("setiff_again", ioctl(fd, TUNSETIFF, &ifr));
	return 0;
}
