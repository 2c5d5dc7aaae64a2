"""kgnorm.text"""
