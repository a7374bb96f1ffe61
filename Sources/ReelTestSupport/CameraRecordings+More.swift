// More recorded cameras: an 8-megapixel MJPEG camera and a UVC metadata-only node.

extension CameraRecordings {
    /// An 8-megapixel document/USB camera (uvcvideo), in the current `v4l2-ctl` layout:
    /// MJPEG at 30 fps up to 1920x1080 and at 15 fps up to 3264x2448; YUYV only up to
    /// 1920x1080, and only 640x480 at 30 fps. Above 1920x1080 only MJPEG exists. The format
    /// list is a published listing.
    public static let eightMegapixelMJPEG = """
Driver Info:
	Driver name      : uvcvideo
	Card type        : 8MP USB Camera: 8MP USB Camera
	Bus info         : usb-0000:00:14.0-3
	Driver version   : 6.1.76
	Capabilities     : 0x84a00001
		Video Capture
		Metadata Capture
		Streaming
		Extended Pix Format
		Device Capabilities
	Device Caps      : 0x04200001
		Video Capture
		Streaming
		Extended Pix Format
Priority: 2
Video input : 0 (Camera 1: ok)
Format Video Capture:
	Width/Height      : 3264/2448
	Pixel Format      : 'MJPG' (Motion-JPEG)
	Field             : None
	Bytes per Line    : 0
	Size Image        : 15980544
	Colorspace        : sRGB
Streaming Parameters Video Capture:
	Capabilities     : timeperframe
	Frames per second: 15.000 (15/1)
	Read buffers     : 0

ioctl: VIDIOC_ENUM_FMT
	Type: Video Capture

	[0]: 'MJPG' (Motion-JPEG, compressed)
		Size: Discrete 640x480
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 800x600
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 1024x768
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 1280x720
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 1600x1200
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 1920x1080
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 2048x1536
			Interval: Discrete 0.067s (15.000 fps)
		Size: Discrete 2592x1944
			Interval: Discrete 0.067s (15.000 fps)
		Size: Discrete 3264x1836
			Interval: Discrete 0.067s (15.000 fps)
		Size: Discrete 3264x2448
			Interval: Discrete 0.067s (15.000 fps)
	[1]: 'YUYV' (YUYV 4:2:2)
		Size: Discrete 640x480
			Interval: Discrete 0.033s (30.000 fps)
		Size: Discrete 800x600
			Interval: Discrete 0.040s (25.000 fps)
		Size: Discrete 1024x768
			Interval: Discrete 0.067s (15.000 fps)
		Size: Discrete 1280x720
			Interval: Discrete 0.100s (10.000 fps)
		Size: Discrete 1600x1200
			Interval: Discrete 0.143s (7.000 fps)
		Size: Discrete 1920x1080
			Interval: Discrete 0.200s (5.000 fps)
"""

    /// The second node of a UVC camera: metadata only, no video capture.
    public static let uvcMetadataNode = """
Driver Info:
	Driver name      : uvcvideo
	Card type        : HD Pro Webcam C920
	Bus info         : usb-0000:00:14.0-1
	Driver version   : 6.1.76
	Capabilities     : 0x84a00001
		Video Capture
		Metadata Capture
		Streaming
		Extended Pix Format
		Device Capabilities
	Device Caps      : 0x04a00000
		Metadata Capture
		Streaming
		Extended Pix Format
Priority: 2
ioctl: VIDIOC_ENUM_FMT
	Type: Video Capture
"""
}
