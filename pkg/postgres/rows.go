package postgres

// Convert turns a statement's rows into a store's domain values, one each,
// in order.
func Convert[R, T any](rows []R, conv func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out
}
