"""kgnorm.encoders"""
