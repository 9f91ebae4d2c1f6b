package addrkey

import "testing"

func TestOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7:5000", "192.0.2.7"},
		{"192.0.2.7", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"", ""},
		{"proxy.example:80", ""},
	} {
		if got := Of(tc.in); got != tc.want {
			t.Errorf("Of(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
