package textcheck

// QueueName reports whether q is a queue name: ^[a-z0-9][a-z0-9._-]{0,62}$,
// the database's queue_name domain (checked without a regexp). The queue's
// own calls, endpoints, adapters, routes and replays all hold names to it.
func QueueName(q string) bool {
	if q == "" || len(q) > 63 {
		return false
	}
	for i := range len(q) {
		c := q[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return false
		}
	}
	return true
}
