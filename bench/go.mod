module github.com/wirespeed/wirespeed/bench

go 1.26.0

require github.com/wirespeed/wirespeed v0.0.0

require github.com/gaissmai/bart v0.30.0

replace github.com/wirespeed/wirespeed => ../
