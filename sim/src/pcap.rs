//! pcap / pcapng streaming codec.
