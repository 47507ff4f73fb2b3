// rtnetlink on a tap: RTM_SETLINK up and MTU (by ifindex, with NLM_F_ACK), RTM_NEWLINK
// with NLM_F_EXCL on it, RTM_SETLINK with an MTU out of range, then RTM_DELLINK by name;
// prints "key=value" lines (each ack's error, the flags and MTU the socket ioctls then
// see, TUNSETQUEUE after the delete) to compare with the real kernel.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

struct req {
	struct nlmsghdr nh;
	struct ifinfomsg ifm;
	char attrs[64];
};

static void attr(struct req *r, unsigned short type, const void *data, int len)
{
	struct rtattr *rta = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static void start(struct req *r, int type, int flags, int index, unsigned seq)
{
	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_LENGTH(sizeof(r->ifm));
	r->nh.nlmsg_type = type;
	r->nh.nlmsg_flags = NLM_F_REQUEST | flags;
	r->nh.nlmsg_seq = seq;
	r->ifm.ifi_family = AF_UNSPEC;
	r->ifm.ifi_index = index;
}

// Sends the request; prints the ack's error (0 or -errno) for its sequence number.
static void ask(int nl, struct req *r, const char *key)
{
	char buf[4096];
	if (send(nl, r, r->nh.nlmsg_len, 0) != (ssize_t)r->nh.nlmsg_len) {
		printf("%s_send=%s\n", key, strerrorname_np(errno));
		return;
	}
	ssize_t n = recv(nl, buf, sizeof(buf), 0);
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR) {
		printf("%s=no ack (%zd)\n", key, n);
		return;
	}
	struct nlmsgerr *e = NLMSG_DATA(h);
	printf("%s=%d seq_ok=%d\n", key, e->error, h->nlmsg_seq == r->nh.nlmsg_seq);
}

int main(void)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "rtnl0");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
	printf("setiff=%d\n", ioctl(fd, TUNSETIFF, &ifr));
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	ioctl(s, SIOCGIFINDEX, &ifr);
	int index = ifr.ifr_ifindex;
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct req r;
	unsigned mtu = 1400;

	start(&r, RTM_SETLINK, NLM_F_ACK, index, 1);
	r.ifm.ifi_flags = IFF_UP;
	r.ifm.ifi_change = IFF_UP;
	attr(&r, IFLA_MTU, &mtu, 4);
	ask(nl, &r, "setlink_up_mtu");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "rtnl0");
	ioctl(s, SIOCGIFFLAGS, &ifr);
	printf("up=%d\n", ifr.ifr_flags & IFF_UP);
	ioctl(s, SIOCGIFMTU, &ifr);
	printf("mtu=%d\n", ifr.ifr_mtu);

	start(&r, RTM_SETLINK, NLM_F_ACK, index, 2);
	r.ifm.ifi_change = IFF_UP;
	ask(nl, &r, "setlink_down");
	ioctl(s, SIOCGIFFLAGS, &ifr);
	printf("up_after_down=%d\n", ifr.ifr_flags & IFF_UP);

	start(&r, RTM_DELLINK, 0, 0, 3);
	attr(&r, IFLA_IFNAME, "rtnl0", 6);
	printf("dellink_send=%d\n", send(nl, &r, r.nh.nlmsg_len, 0) == r.nh.nlmsg_len ? 0 : -1);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "rtnl0");
	ifr.ifr_flags = IFF_DETACH_QUEUE;
	int q = ioctl(fd, TUNSETQUEUE, &ifr);
	printf("setqueue_after_del=%s\n", q == 0 ? "0" : strerrorname_np(errno));
	char b[64];
	printf("read_after_del=%s\n", read(fd, b, sizeof(b)) < 0 ? strerrorname_np(errno) : "data");
	return 0;
}
