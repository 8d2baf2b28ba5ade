package textcheck

import "strings"

// DNSName reports whether name, in lower case and without a trailing dot,
// is a DNS host name: at most 253 characters of labels of 1–63 letters,
// digits, '-' or '_', none starting or ending with '-', the last one not
// all digits (that is an IPv4 address gone wrong, never a name). The
// operator's allow list and a tenant's adapter address are both held to it.
func DNSName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}
