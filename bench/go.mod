module github.com/wirespeed/wirespeed/bench

go 1.26.0

require github.com/wirespeed/wirespeed v0.0.0

require (
	github.com/gaissmai/bart v0.30.0
	github.com/gopacket/gopacket v1.7.7
	golang.org/x/sys v0.50.0
)

require golang.org/x/net v0.55.0 // indirect

replace github.com/wirespeed/wirespeed => ../
